// Package all links every provider into a binary so provider.New can build
// any of them: import it for its side effect.
package all

import (
	// Each package registers its provider in init.
	_ "github.com/yolop-dev/yolop/internal/provider/anthropic"
	_ "github.com/yolop-dev/yolop/internal/provider/openai"
	_ "github.com/yolop-dev/yolop/internal/provider/sim"
)
