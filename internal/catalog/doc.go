// Package catalog is what yolop does with the sessions saved in a data
// directory without running one: list and describe them (with typed
// states), find the one `-c` continues, follow a repository or checkout
// that was moved, search their histories, plan a fork, remove a session,
// and list, prune and prepare the worktrees under the data directory.
// It reads sessions through session, timeline and search without taking
// their locks; what it writes (a moved session's workspace.json, a removed
// session, a pruned in-place session's refs) it writes holding the
// session's lock, so a session in use is never changed under its owner.
package catalog
