package provider

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Factory builds a provider from a resolved Config.
type Factory func(cfg Config) (Provider, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a provider constructible by New. The sim, openai and
// anthropic packages register themselves in init; a binary links them with a
// blank import of internal/provider/all. Registering a name twice panics
// because it is a programming error.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("provider: Register called twice for " + name)
	}
	registry[name] = f
}

// New builds the provider named by cfg.Provider (empty means sim).
func New(cfg Config) (Provider, error) {
	name := cfg.Provider
	if name == "" {
		name = NameSim
	}
	registryMu.RLock()
	f, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		if !knownName(name) {
			return nil, fmt.Errorf("provider: unknown provider %q (choose one of %s)", name, strings.Join(knownNames, ", "))
		}
		return nil, fmt.Errorf("provider: %q is not linked into this binary; import github.com/yolop-dev/yolop/internal/provider/all", name)
	}
	return f(cfg)
}

// Registered lists the providers New can build, sorted.
func Registered() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrUnknown is wrapped by the error for a provider name yolop does not
// know.
var ErrUnknown = errors.New("unknown provider")

var knownNames = []string{NameSim, NameOpenAI, NameAnthropic}

func knownName(name string) bool {
	for _, n := range knownNames {
		if n == name {
			return true
		}
	}
	return false
}
