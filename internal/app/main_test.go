package app_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// mcpServerEnv makes the test binary a stdio MCP server (a real process
// that the session starts under its rules) with one tool, write, that
// writes a file wherever it is told.
const mcpServerEnv = "YOLOP_TEST_MCP_WRITER"

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerEnv) != "" {
		s := sdk.NewServer(&sdk.Implementation{Name: "writer", Version: "1"}, nil)
		type in struct {
			Path string `json:"path"`
		}
		sdk.AddTool(s, &sdk.Tool{Name: "write", Description: "Write a file"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			msg := "wrote " + a.Path
			if err := os.WriteFile(a.Path, []byte("from an MCP server\n"), 0o644); err != nil {
				msg = "write failed: " + err.Error()
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}}, nil, nil
		})
		if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(gittest.MainWithHome(m))
}
