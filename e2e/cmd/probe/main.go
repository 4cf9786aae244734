// Command probe is what a step of one team runs to reach what belongs to another: it makes
// each attempt it is given and prints one line of its outcome, "denied: ATTEMPT: REASON"
// when it was refused or could not be made, "ALLOWED: ATTEMPT: WHAT" when it succeeded;
// its exit status is 1 when any was allowed. The e2e tests of teams as tenants run it as a
// task and read its lines.
//
//	probe -api https://10.88.0.1:6443 -kubelet https://10.87.0.1:10250 -namespace B -pod P -container C
//
// Attempts:
//   - the namespace's service account token at its usual path (a pod that mounts none has
//     no file there);
//   - the API server, anonymously and with every token the step has (the one in
//     $CONCOURSE_IDENTITY_TOKEN_FILE, the service account's if any): the other namespace's
//     Secrets, pods, the pod's log and its PersistentVolumeClaims;
//   - the kubelet's API: the other pod's container log.
//
// The server's certificate is not verified: what is probed is whether the server gives
// the step anything, not whom the step talks to.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// serviceAccountToken is where a pod's service account token is mounted when it is.
const serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

func main() {
	api := flag.String("api", "", "the API server's URL")
	kubelet := flag.String("kubelet", "", "the kubelet's URL")
	namespace := flag.String("namespace", "", "the other team's namespace")
	pod := flag.String("pod", "", "a pod of the other team's")
	container := flag.String("container", "", "a container of that pod")
	flag.Parse()
	if *api == "" || *kubelet == "" || *namespace == "" || *pod == "" || *container == "" {
		flag.Usage()
		os.Exit(2)
	}
	p := &prober{out: os.Stdout, client: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // see the package doc
	}}

	if _, err := os.Stat(serviceAccountToken); err == nil {
		p.allowed("service account token", "mounted at "+serviceAccountToken)
	} else {
		p.denied("service account token", "no file at "+serviceAccountToken)
	}
	credentials := []credential{{name: "anonymously"}}
	for _, file := range []string{os.Getenv("CONCOURSE_IDENTITY_TOKEN_FILE"), serviceAccountToken} {
		if file == "" {
			continue
		}
		if token, err := os.ReadFile(file); err == nil {
			credentials = append(credentials, credential{name: "with the token of " + file, token: strings.TrimSpace(string(token))})
		}
	}
	base := strings.TrimSuffix(*api, "/") + "/api/v1/namespaces/" + *namespace
	for _, c := range credentials {
		p.get("API: secrets of "+*namespace+" "+c.name, base+"/secrets", c.token)
		p.get("API: pods of "+*namespace+" "+c.name, base+"/pods", c.token)
		p.get("API: log of pod "+*namespace+"/"+*pod+" "+c.name, base+"/pods/"+*pod+"/log?container="+*container, c.token)
		p.get("API: persistentvolumeclaims of "+*namespace+" "+c.name, base+"/persistentvolumeclaims", c.token)
	}
	p.get("kubelet: log of pod "+*namespace+"/"+*pod, strings.TrimSuffix(*kubelet, "/")+"/containerLogs/"+*namespace+"/"+*pod+"/"+*container, "")
	if p.anyAllowed {
		os.Exit(1)
	}
}

// credential is one way the step presents itself: a bearer token, or none.
type credential struct {
	name, token string
}

type prober struct {
	out        io.Writer
	client     *http.Client
	anyAllowed bool
}

// get makes one GET; a 2xx answer is an attempt allowed, anything else one denied.
func (p *prober) get(attempt, url, token string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		p.denied(attempt, err.Error())
		return
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		p.denied(attempt, "unreachable: "+err.Error())
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 == 2 {
		p.allowed(attempt, fmt.Sprintf("HTTP %d, %d bytes", resp.StatusCode, len(body)))
		return
	}
	p.denied(attempt, fmt.Sprintf("HTTP %d", resp.StatusCode))
}

func (p *prober) allowed(attempt, what string) {
	p.anyAllowed = true
	fmt.Fprintf(p.out, "ALLOWED: %s: %s\n", attempt, what)
}

func (p *prober) denied(attempt, reason string) {
	fmt.Fprintf(p.out, "denied: %s: %s\n", attempt, reason)
}
