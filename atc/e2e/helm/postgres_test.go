//go:build e2e

package helm

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/concourse-tekton/concourse-tekton/atc/e2e/internal/e2eenv"
)

// database is a Postgres the test runs on the host, for the release's web node.
type database struct {
	port     int
	password string
}

// startPostgres runs Postgres 15 (Debian's, as make -C atc deps installs it) on host, the
// host's address on the pod bridge, with password authentication for the pods' network;
// it stops when the test ends. Postgres refuses to run as root: then it runs in a user
// namespace where root is an unprivileged user.
func startPostgres(t *testing.T, host string) database {
	t.Helper()
	bin := e2eenv.Or("CONCOURSE_TEKTON_PG_BIN", "/usr/lib/postgresql/15/bin")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := database{port: freePortOn(t, host), password: rand.String(24)}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(db.password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if out, err := asPostgres(bin+"/initdb", "-D", data, "-U", "concourse", "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-instructions").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(hba, "host all all %s/16 scram-sha-256\n", host)
	if cerr := hba.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "postgres.log")
	if out, err := asPostgres(bin+"/pg_ctl", "-D", data, "-l", log, "-w", "-t", "60",
		"-o", fmt.Sprintf("-c listen_addresses=%s -p %d -c unix_socket_directories=''", host, db.port), "start").CombinedOutput(); err != nil {
		logged, _ := os.ReadFile(log)
		t.Fatalf("starting Postgres: %v\n%s%s", err, out, logged)
	}
	t.Cleanup(func() {
		if out, err := asPostgres(bin+"/pg_ctl", "-D", data, "-m", "fast", "-w", "stop").CombinedOutput(); err != nil {
			t.Errorf("stopping Postgres: %v\n%s", err, out)
		}
	})
	create := exec.Command(bin+"/createdb", "-h", host, "-p", strconv.Itoa(db.port), "-U", "concourse", "atc")
	create.Env = append(os.Environ(), "PGPASSWORD="+db.password)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("createdb atc: %v\n%s", err, out)
	}
	return db
}

func asPostgres(name string, args ...string) *exec.Cmd {
	if os.Getuid() == 0 {
		return exec.Command("unshare", append([]string{"--user", "--map-user=1", "--map-group=1", name}, args...)...)
	}
	return exec.Command(name, args...)
}

// freePortOn is a port free on host, below Linux's ephemeral range where it can.
func freePortOn(t *testing.T, host string) int {
	t.Helper()
	for port := 15500; port < 15600; port++ {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no free port on %s in 15500-15599", host)
	return 0
}
