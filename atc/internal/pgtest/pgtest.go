// Package pgtest runs a Postgres of a test's own: Postgres 15's binaries (Debian's, as
// `make -C atc deps` installs them), a fresh database cluster in the test's temporary
// directory, password authentication, the database atc; stopped when the test ends.
// Postgres refuses to run as root: then it runs in a user namespace where root is an
// unprivileged user.
package pgtest

import (
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	// The database/sql driver "pgx", as Concourse's web node uses it.
	_ "github.com/jackc/pgx/v5/stdlib"
	"k8s.io/apimachinery/pkg/util/rand"
)

// User is the database's owner.
const User = "concourse"

// DB is a running Postgres.
type DB struct {
	Host     string
	Port     int
	Password string
}

// Start runs Postgres on host (an address of this machine), accepting password logins
// from host's /16, and makes the database atc.
func Start(t testing.TB, host string) DB {
	t.Helper()
	bin := os.Getenv("CONCOURSE_TEKTON_PG_BIN")
	if bin == "" {
		bin = "/usr/lib/postgresql/15/bin"
	}
	if _, err := os.Stat(filepath.Join(bin, "postgres")); err != nil {
		t.Fatalf("no Postgres 15 in %s (make -C atc deps installs it; CONCOURSE_TEKTON_PG_BIN names another): %v", bin, err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := DB{Host: host, Port: freePortOn(t, host), Password: rand.String(24)}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(db.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if out, err := asPostgres(bin+"/initdb", "-D", data, "-U", User, "--pwfile", pwfile,
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
		"-o", fmt.Sprintf("-c listen_addresses=%s -p %d -c unix_socket_directories=''", host, db.Port), "start").CombinedOutput(); err != nil {
		logged, _ := os.ReadFile(log)
		t.Fatalf("starting Postgres: %v\n%s%s", err, out, logged)
	}
	t.Cleanup(func() {
		if out, err := asPostgres(bin+"/pg_ctl", "-D", data, "-m", "fast", "-w", "stop").CombinedOutput(); err != nil {
			t.Errorf("stopping Postgres: %v\n%s", err, out)
		}
	})
	create := exec.Command(bin+"/createdb", "-h", host, "-p", strconv.Itoa(db.Port), "-U", User, "atc")
	create.Env = append(os.Environ(), "PGPASSWORD="+db.Password)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("createdb atc: %v\n%s", err, out)
	}
	return db
}

// DSN is the URL of the database atc.
func (db DB) DSN() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(User, db.Password), Host: net.JoinHostPort(db.Host, strconv.Itoa(db.Port)),
		Path: "/atc", RawQuery: "sslmode=disable"}
	return u.String()
}

// Open connects to the database atc; the connections close when the test ends.
func (db DB) Open(t testing.TB) *sql.DB {
	t.Helper()
	conn, err := sql.Open("pgx", db.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func asPostgres(name string, args ...string) *exec.Cmd {
	if os.Getuid() == 0 {
		return exec.Command("unshare", append([]string{"--user", "--map-user=1", "--map-group=1", name}, args...)...)
	}
	return exec.Command(name, args...)
}

// freePortOn is a port free on host, below Linux's ephemeral range where it can.
func freePortOn(t testing.TB, host string) int {
	t.Helper()
	// From a random one: tests of several packages may look at once.
	first := rand.Intn(100)
	for i := range 100 {
		port := 15500 + (first+i)%100
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no free port on %s in 15500-15599", host)
	return 0
}
