package replication

import (
	"strconv"

	"github.com/paddock/paddock/replicator"
)

type replicatorTaskDef = replicator.TaskDef

func taskDef(source, target, include string) replicator.TaskDef {
	return replicator.TaskDef{Source: source, Target: target, Include: []string{include},
		ServerID: replicator.DefaultServerID(include), Enabled: true}
}

func itoa(n int) string { return strconv.Itoa(n) }
