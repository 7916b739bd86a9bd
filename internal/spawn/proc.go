package spawn

// Record identifies one process across pid reuse: its pid, its start time
// (clock ticks after boot, /proc/<pid>/stat field 22) and the boot it
// started in.
type Record struct {
	Op      string `json:"op"` // "start" or "end"
	PID     int    `json:"pid"`
	Start   uint64 `json:"start"`
	Boot    string `json:"boot"`
	Role    string `json:"role,omitempty"` // RoleHelper, RoleCommand or RoleAdopted
	Task    string `json:"task,omitempty"`
	Command string `json:"command,omitempty"`
	Owner   int    `json:"owner,omitempty"` // pid of the yolop process
}

// Roles of recorded processes.
const (
	RoleHelper  = "helper"
	RoleCommand = "command"
	// RoleAdopted is a process the helper inherited as a subreaper (its
	// parent, a descendant of the command, exited first).
	RoleAdopted = "adopted"
)
