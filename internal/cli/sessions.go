package cli

import "github.com/yolop-dev/yolop/internal/cli/cmdutil"

func writeJSON(o *rootOptions, v any) error { return cmdutil.WriteJSON(o.f.IO.Out, v) }
