package provider

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/yolop-dev/yolop/internal/secret"
)

// Default models used when neither flags, environment nor settings name one.
const (
	DefaultSimModel       = "sim"
	DefaultOpenAIModel    = "gpt-4.1"
	DefaultAnthropicModel = "claude-sonnet-4-5"
)

// Settings is the shape of ~/.config/yolop/settings.toml:
//
//	provider = "anthropic"      # sim | openai | anthropic
//	model = "claude-sonnet-4-5" # used when the provider's table names none
//
//	[openai]
//	api_key = "sk-…"
//	base_url = "http://localhost:11434/v1"
//	model = "qwen3"
//	context_window = 32768
//
//	[anthropic]
//	api_key = "sk-ant-…"
//	model = "claude-sonnet-4-5"
//	thinking_budget = 4096
//
//	[worktree]
//	spares = 1                  # parked worktrees kept per repository (0: none)
//	spare_keeps = "dependencies" # or "nothing": recycled worktrees fully clean
//	setup = "npm ci"            # run once in a new session's worktree, before its first turn
//
//	[timeouts]          # Go durations; "0" disables one
//	connect = "30s"     # TCP connect and TLS handshake
//	first_byte = "10m"  # request sent -> response headers
//	idle = "10m"        # silence within a streamed response
type Settings struct {
	Provider  string           `toml:"provider"`
	Model     string           `toml:"model"`
	OpenAI    ProviderSection  `toml:"openai"`
	Anthropic ProviderSection  `toml:"anthropic"`
	Timeouts  TimeoutsSection  `toml:"timeouts"`
	MCP       MCPSection       `toml:"mcp"`
	Worktree  WorktreeSection  `toml:"worktree"`
	Tools     ToolsSection     `toml:"tools"`
	Sandbox   SandboxSection   `toml:"sandbox"`
	Workspace WorkspaceSection `toml:"workspace"`
}

// WorkspaceSection chooses where new sessions work:
//
//	[workspace]
//	mode = "in-place"   # worktree (the default), in-place or none
//	keep_days = 30      # in-place sessions' snapshot refs age out after this many idle days
//	max_files = 200000  # a folder outside git with more files is refused unless --workspace in-place
//	max_file_size = "50 MiB" # larger files are left out of a folder's checkpoints (bytes, or "20 MiB", "1 GB")
type WorkspaceSection struct {
	Mode        string    `toml:"mode"`
	KeepDays    *int      `toml:"keep_days"`
	MaxFiles    *int      `toml:"max_files"`
	MaxFileSize *ByteSize `toml:"max_file_size"`
}

// ByteSize is a size in bytes written as a whole number or a string with a
// unit ("50 MiB", "1GB", "512 KiB").
type ByteSize int64

// UnmarshalTOML reads a whole number of bytes or a string with a unit.
func (b *ByteSize) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Errorf("%d: want 0 or more bytes", x)
		}
		*b = ByteSize(x)
		return nil
	case string:
		n, err := ParseByteSize(x)
		if err != nil {
			return err
		}
		*b = ByteSize(n)
		return nil
	}
	return fmt.Errorf("%v: want a number of bytes or a size such as \"50 MiB\"", v)
}

// ParseByteSize reads "50 MiB", "50MiB", "2 GB", "1024": KiB, MiB, GiB are
// powers of 1024, KB, MB, GB of 1000.
func ParseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q: want a size such as \"50 MiB\" or a number of bytes", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	units := map[string]int64{"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 1e3, "mb": 1e6, "gb": 1e9}
	u, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (use KiB, MiB, GiB, KB, MB or GB)", s, strings.TrimSpace(t[i:]))
	}
	return n * u, nil
}

// MCPSection lists MCP servers:
//
//	[mcp.servers.everything]
//	command = "npx"
//	args = ["-y", "@modelcontextprotocol/server-everything"]
//	env = { API_TOKEN = "…" }   # the server's whole environment besides PATH, HOME, TMPDIR, LANG, USER
//	secret_env = ["DB_URL"]     # env values redacted although their names do not look secret
//
//	[mcp.servers.remote]
//	url = "http://localhost:3001/mcp"
//	headers = { Authorization = "Bearer …" }
//	timeout = "10m"             # one tool call of this server; "0": no limit
//
//	[mcp]
//	call_timeout = "120s"       # one tool call of every other server (the default)
type MCPSection struct {
	CallTimeout string               `toml:"call_timeout"`
	Servers     map[string]MCPServer `toml:"servers"`
}

// MCPServer is one MCP server's settings.
type MCPServer struct {
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	URL     string            `toml:"url"`
	Headers map[string]string `toml:"headers"`
	Timeout string            `toml:"timeout"`
	// SecretEnv names Env variables whose values are secrets although
	// their names do not look like it (secret.LooksSecret): they are
	// redacted like the others.
	SecretEnv []string `toml:"secret_env"`
}

// MCPCallTimeout is how long one tool call of MCP server name may take:
// its own timeout, else [mcp] call_timeout, else 0 (the caller's default);
// negative when the setting is "0" (no limit). name "" (a server an editor
// configured) reads only [mcp] call_timeout. settingsPath names the file
// in errors.
func (s Settings) MCPCallTimeout(name, settingsPath string) (time.Duration, error) {
	v, key := s.MCP.CallTimeout, "[mcp] call_timeout"
	if own := s.MCP.Servers[name].Timeout; name != "" && strings.TrimSpace(own) != "" {
		v, key = own, fmt.Sprintf("[mcp.servers.%s] timeout", name)
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if v == "0" {
		return -1, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s in %s: %q is not a duration; write it like \"120s\" or \"10m\", or \"0\" for no limit", key, settingsName(settingsPath), v)
	}
	return d, nil
}

// WorktreeSection holds the settings of session worktrees.
type WorktreeSection struct {
	// Spares is how many parked spare worktrees a repository keeps so
	// that new sessions start without a checkout; nil means the default.
	Spares *int `toml:"spares"`
	// SpareKeeps is what a recycled worktree keeps of its ignored files:
	// "dependencies" (write-blocklisted dependency and build directories,
	// the default) or "nothing".
	SpareKeeps string `toml:"spare_keeps"`
	// Setup is a shell command run once in a new session's worktree,
	// before its first turn (installing dependencies); "" runs nothing.
	Setup string `toml:"setup"`
	// Share lists directories (relative to the checkout's top, ignored by
	// git: node_modules, target, …) copied from the checkout into each new
	// session worktree.
	Share []string `toml:"share"`
}

// ToolsSection configures the tools' commands.
//
//	[tools]
//	pass_env = ["GITHUB_TOKEN"] # secret-looking variables the commands still get
//	env = "inherit"             # or "login": the environment of a login shell (bash -l)
type ToolsSection struct {
	PassEnv []string `toml:"pass_env"`
	// Env is where the commands' environment comes from: EnvInherit (""
	// too: the environment yolop was started with) or EnvLogin.
	Env string `toml:"env"`
}

// The values of [tools] env.
const (
	EnvInherit = "inherit"
	EnvLogin   = "login"
)

// SandboxSection configures the tools' write sandbox.
//
//	[sandbox]
//	level = "write"            # off | write | strict
//	caches = ["~/.cache/go-build", "~/go/pkg/mod"] # writable outside the workspace; replaces the default list
//	extra_caches = ["~/.cache/my-tool"]             # added to the default list
//	ports = [443]              # strict: outbound TCP ports allowed
//	allow_unconfined = true    # run tools unconfined when the sandbox is unavailable
type SandboxSection struct {
	Level           string   `toml:"level"`
	Caches          []string `toml:"caches"`
	ExtraCaches     []string `toml:"extra_caches"`
	Ports           []int    `toml:"ports"`
	AllowUnconfined *bool    `toml:"allow_unconfined"`
}

// ProviderSection holds one provider's settings.
type ProviderSection struct {
	APIKey         string `toml:"api_key"`
	BaseURL        string `toml:"base_url"`
	Model          string `toml:"model"`
	ThinkingBudget int    `toml:"thinking_budget"`
	// ContextWindow is the model's context window in tokens, for the
	// status bar's fill and editors' usage display (known models have a
	// default).
	ContextWindow int `toml:"context_window"`
}

// DefaultSettingsPath is $XDG_CONFIG_HOME/yolop/settings.toml, falling back
// to $HOME/.config/yolop/settings.toml; "" when neither variable is set.
func DefaultSettingsPath(env func(string) string) string {
	if d := env("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "yolop", "settings.toml")
	}
	if h := env("HOME"); h != "" {
		return filepath.Join(h, ".config", "yolop", "settings.toml")
	}
	return ""
}

// LoadSettings reads a settings file. A missing file yields zero Settings;
// unknown keys are an error so that a typo does not silently fall back to a
// default.
func LoadSettings(path string) (Settings, error) {
	var s Settings
	if path == "" {
		return s, nil
	}
	md, err := toml.DecodeFile(path, &s)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Settings{}, nil
		}
		return Settings{}, fmt.Errorf("settings %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		sort.Strings(keys)
		return Settings{}, fmt.Errorf("settings %s: unknown key(s) %s (known: provider, model, [openai]/[anthropic] api_key, base_url, model, thinking_budget, context_window; [timeouts] connect, first_byte, idle; [mcp] call_timeout; [mcp.servers.NAME] command, args, env, secret_env, url, headers, timeout; [worktree] spares, spare_keeps, setup; [tools] pass_env, env; [sandbox] level, caches, extra_caches, ports, allow_unconfined)", path, strings.Join(keys, ", "))
	}
	// Whatever the settings hold that is secret is redacted from then on,
	// whether or not this process uses it.
	s.addSecrets()
	switch s.Tools.Env {
	case "", EnvInherit, EnvLogin:
	default:
		return Settings{}, fmt.Errorf("settings %s: [tools] env = %q: use \"inherit\" (the environment yolop was started with, the default) or \"login\" (a login shell's, bash -l)", path, s.Tools.Env)
	}
	for name, srv := range s.MCP.Servers {
		for _, k := range srv.SecretEnv {
			if _, ok := srv.Env[k]; !ok {
				return Settings{}, fmt.Errorf("settings %s: [mcp.servers.%s] secret_env names %s, which its env does not set; list only variables of its env", path, name, k)
			}
		}
	}
	return s, nil
}

// addSecrets makes the settings' secrets known to the redaction: provider
// keys, passwords in URLs, MCP servers' secret variables (by name, or
// listed in secret_env) and credential headers, and passwords in their
// URLs, arguments and variables.
func (s Settings) addSecrets() {
	secret.Add("openai.api_key", s.OpenAI.APIKey)
	secret.Add("anthropic.api_key", s.Anthropic.APIKey)
	secret.AddURLs("openai.base_url", s.OpenAI.BaseURL)
	secret.AddURLs("anthropic.base_url", s.Anthropic.BaseURL)
	for name, srv := range s.MCP.Servers {
		AddMCPSecrets("mcp.servers."+name, srv.Env, srv.SecretEnv, srv.Headers, srv.URL, srv.Args)
	}
}

// AddMCPSecrets makes an MCP server's secrets known to the redaction
// (prefix names them in the marker): the values of env variables whose
// names look secret or are listed in secretEnv, credential headers
// (secret.HeaderLooksSecret), and the passwords of URLs in its url,
// arguments, variables and headers.
func AddMCPSecrets(prefix string, env map[string]string, secretEnv []string, headers map[string]string, url string, args []string) {
	listed := map[string]bool{}
	for _, k := range secretEnv {
		listed[k] = true
	}
	for k, v := range env {
		if listed[k] || secret.LooksSecret(k) {
			secret.Add(prefix+".env."+k, v)
		}
		secret.AddURLs(prefix+".env."+k, v)
	}
	for k, v := range headers {
		secret.AddHeader(prefix+".headers."+k, k, v)
	}
	secret.AddURLs(prefix+".url", url)
	for _, a := range args {
		secret.AddURLs(prefix+".args", a)
	}
}

// Resolve merges flags, environment and the settings file, in that order of
// precedence. Environment: YOLOP_PROVIDER, YOLOP_MODEL, OPENAI_API_KEY,
// OPENAI_BASE_URL, ANTHROPIC_API_KEY, YOLOP_TRACE_REQUESTS,
// YOLOP_CONNECT_TIMEOUT, YOLOP_FIRST_BYTE_TIMEOUT, YOLOP_IDLE_TIMEOUT (flags
// name no timeouts). When no provider
// is named anywhere, a configured Anthropic key selects anthropic, else a
// configured OpenAI key (or base URL) selects openai, else sim.
//
// An openai provider may run without a key when a base URL is set, because
// local servers (Ollama, llama.cpp, vLLM) do not check one.
func Resolve(flags Config, env func(string) string, settingsPath string) (Config, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	s, err := LoadSettings(settingsPath)
	if err != nil {
		return Config{}, err
	}
	// Every key yolop knows is redacted from tool results and traces,
	// whichever provider is in use.
	secret.Add("OPENAI_API_KEY", env("OPENAI_API_KEY"))
	secret.Add("ANTHROPIC_API_KEY", env("ANTHROPIC_API_KEY"))
	secret.Add("--api-key", flags.APIKey)
	secret.AddURLs("OPENAI_BASE_URL", env("OPENAI_BASE_URL"))
	secret.AddURLs("--base-url", flags.BaseURL)
	section := func(name string) ProviderSection {
		switch name {
		case NameOpenAI:
			return s.OpenAI
		case NameAnthropic:
			return s.Anthropic
		}
		return ProviderSection{}
	}
	keyFor := func(name string) string {
		switch name {
		case NameOpenAI:
			return first(env("OPENAI_API_KEY"), s.OpenAI.APIKey)
		case NameAnthropic:
			return first(env("ANTHROPIC_API_KEY"), s.Anthropic.APIKey)
		}
		return ""
	}
	baseFor := func(name string) string {
		switch name {
		case NameOpenAI:
			return first(env("OPENAI_BASE_URL"), s.OpenAI.BaseURL)
		case NameAnthropic:
			return s.Anthropic.BaseURL
		}
		return ""
	}

	timeouts, err := resolveTimeouts(env, s.Timeouts, settingsPath)
	if err != nil {
		return Config{}, err
	}
	out := Config{
		TracePath:      first(flags.TracePath, env("YOLOP_TRACE_REQUESTS")),
		HTTPClient:     flags.HTTPClient,
		ThinkingBudget: flags.ThinkingBudget,
		Timeouts:       timeouts,
	}
	out.Provider = strings.ToLower(strings.TrimSpace(first(flags.Provider, env("YOLOP_PROVIDER"), s.Provider)))
	if out.Provider == "" {
		switch {
		case keyFor(NameAnthropic) != "":
			out.Provider = NameAnthropic
		case keyFor(NameOpenAI) != "" || baseFor(NameOpenAI) != "":
			out.Provider = NameOpenAI
		default:
			out.Provider, out.NoKey = NameSim, true
		}
	}
	if !knownName(out.Provider) {
		return Config{}, fmt.Errorf("%w %q (choose one of %s via --provider, YOLOP_PROVIDER or provider in %s)",
			ErrUnknown, out.Provider, strings.Join(knownNames, ", "), settingsName(settingsPath))
	}

	sec := section(out.Provider)
	var defModel string
	switch out.Provider {
	case NameSim:
		defModel = DefaultSimModel
	case NameOpenAI:
		defModel = DefaultOpenAIModel
	case NameAnthropic:
		defModel = DefaultAnthropicModel
	}
	out.Model = first(flags.Model, env("YOLOP_MODEL"), sec.Model, s.Model, defModel)
	out.ContextWindow = flags.ContextWindow
	if out.ContextWindow == 0 {
		out.ContextWindow = sec.ContextWindow
	}
	if out.ContextWindow < 0 {
		return Config{}, fmt.Errorf("context_window %d in %s is negative; leave it out when unknown", out.ContextWindow, settingsName(settingsPath))
	}
	if out.ContextWindow == 0 {
		out.ContextWindow = KnownContextWindow(out.Provider, out.Model)
	}
	if out.Provider == NameSim {
		return out, nil
	}
	out.APIKey = first(flags.APIKey, keyFor(out.Provider))
	out.BaseURL = first(flags.BaseURL, baseFor(out.Provider))
	if out.ThinkingBudget == 0 && out.Provider == NameAnthropic {
		out.ThinkingBudget = sec.ThinkingBudget
	}
	if out.ThinkingBudget < 0 {
		return Config{}, fmt.Errorf("thinking budget %d is negative; use 0 to disable thinking", out.ThinkingBudget)
	}
	if out.APIKey == "" && !(out.Provider == NameOpenAI && out.BaseURL != "") {
		envName := "OPENAI_API_KEY"
		if out.Provider == NameAnthropic {
			envName = "ANTHROPIC_API_KEY"
		}
		return Config{}, fmt.Errorf("provider %s needs an API key: set %s or [%s] api_key in %s (or use --provider sim to work offline)",
			out.Provider, envName, out.Provider, settingsName(settingsPath))
	}
	return out, nil
}

func settingsName(path string) string {
	if path == "" {
		return "~/.config/yolop/settings.toml"
	}
	return path
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// KnownContextWindow is the context window of well-known models, 0 when
// the model is not known (local models: set context_window).
func KnownContextWindow(provider, model string) int {
	m := strings.ToLower(model)
	switch {
	case provider == NameSim:
		return 200_000
	case strings.HasPrefix(m, "claude-"):
		return 200_000
	case strings.HasPrefix(m, "gpt-4.1"):
		return 1_047_576
	case strings.HasPrefix(m, "gpt-5"):
		return 400_000
	case strings.HasPrefix(m, "gpt-4o"):
		return 128_000
	case strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"):
		return 200_000
	}
	return 0
}
