package runner

import (
	"os"
	"syscall"

	"github.com/concourse-tekton/concourse-tekton/runner/cowcopy"
)

// volumeOwner is who the directories the runner makes for a task belong to: the task's
// working directory, the private copies of its inputs, its outputs and its caches, which
// Concourse mounts as volumes of their own.
//
// Concourse makes these volumes for the container's user (concourse/concourse#9593:
// atc/worker/gardenruntime/worker.go getUserInfo, baggageclaim's NamespacePathToUser):
// for a user that is not root, everything in them is given to the user, so that the task
// can write its outputs, caches and input copies; for root, the files keep their owners,
// and only the volume's own directory is root's (an output of a non-root task is handed
// as it is to a later root task). The runner gives an input's files away as it copies
// them (cowcopy.Options.Owner), so this costs no walk beyond the copy; an output or a new
// cache is one directory.
//
// A nil *volumeOwner gives nothing away: a runner that is not root cannot, and what it
// makes is its own already.
type volumeOwner struct {
	uid, gid int
	// all gives everything in a copy away, not only its top directory.
	all bool
}

// volumeOwnerOf is the owner of a task's volumes when the task runs with cred (nil: as
// the runner runs).
func volumeOwnerOf(cred *syscall.Credential) *volumeOwner {
	if os.Geteuid() != 0 {
		return nil
	}
	if cred == nil {
		return &volumeOwner{uid: os.Geteuid(), gid: os.Getegid()}
	}
	return &volumeOwner{uid: int(cred.Uid), gid: int(cred.Gid), all: cred.Uid != 0}
}

// copyOptions are the options of a copy made for the task.
func (o *volumeOwner) copyOptions() cowcopy.Options {
	if o == nil || !o.all {
		return cowcopy.Options{}
	}
	return cowcopy.Options{Owner: &cowcopy.Owner{UID: o.uid, GID: o.gid}}
}

// give gives one directory the runner made for the task to the task's user.
func (o *volumeOwner) give(dir string) error {
	if o == nil {
		return nil
	}
	return os.Lchown(dir, o.uid, o.gid)
}
