package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// registryClient speaks the OCI distribution API to one repository, with the standard
// library alone (the runner runs in any image): blobs and manifests up and down, by
// digest, anonymous or with the credentials of a Docker config (basic, or a bearer token
// from the registry's token service).
type registryClient struct {
	base string // scheme://host[:port]
	repo string // the repository's path
	http *http.Client
	user string // from the Docker config; empty: anonymous
	pass string

	authorization string // the header that the last challenge asked for
}

// newRegistryClient is a client of the repository repo of registry (HOST[:PORT][/PATH]);
// authDir is a Docker config directory (config.json), which need not exist. As the
// image tool does, a registry on a loopback or private address (or localhost, or
// .local) is spoken to over plain HTTP, any other over HTTPS.
func newRegistryClient(registry, repo, authDir string) (*registryClient, error) {
	host, prefix, _ := strings.Cut(strings.TrimSuffix(registry, "/"), "/")
	if host == "" {
		return nil, errors.New("no registry")
	}
	if prefix != "" {
		repo = prefix + "/" + repo
	}
	c := &registryClient{base: registryScheme(host) + "://" + host, repo: repo, http: &http.Client{}}
	var err error
	if c.user, c.pass, err = dockerCredentials(filepath.Join(authDir, "config.json"), host); err != nil {
		return nil, err
	}
	return c, nil
}

func registryScheme(host string) string {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" || strings.HasSuffix(h, ".local") {
		return "http"
	}
	if ip := net.ParseIP(h); ip != nil && (ip.IsLoopback() || ip.IsPrivate()) {
		return "http"
	}
	return "https"
}

// dockerCredentials are the user and password a Docker config gives host; none when the
// file or its entry is absent.
func dockerCredentials(file, host string) (string, string, error) {
	raw, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	var cfg struct {
		Auths map[string]struct {
			Auth     string `json:"auth"`
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return "", "", fmt.Errorf("the registry's Docker config: %w", err)
	}
	for k, a := range cfg.Auths {
		k = strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
		if h, _, _ := strings.Cut(k, "/"); h != host {
			continue
		}
		if a.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return "", "", fmt.Errorf("the registry's Docker config: the auth of %s: %w", host, err)
			}
			user, pass, _ := strings.Cut(string(dec), ":")
			return user, pass, nil
		}
		return a.Username, a.Password, nil
	}
	return "", "", nil
}

// do sends a request made by mk (again, once, with the credentials a 401 asks for).
func (c *registryClient) do(ctx context.Context, mk func() (*http.Request, error)) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := mk()
		if err != nil {
			return nil, err
		}
		req = req.WithContext(ctx)
		c.authorize(req)
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusUnauthorized || attempt > 0 {
			return resp, nil
		}
		challenge := resp.Header.Get("WWW-Authenticate")
		drain(resp)
		authz, err := c.answer(ctx, challenge)
		if err != nil {
			return nil, err
		}
		c.authorization = authz
	}
}

// authorize gives req the credentials the registry asked for last, if it asked.
func (c *registryClient) authorize(req *http.Request) {
	if c.authorization != "" {
		req.Header.Set("Authorization", c.authorization)
	}
}

// answer is the Authorization header that a challenge asks for.
func (c *registryClient) answer(ctx context.Context, challenge string) (string, error) {
	scheme, params := parseChallenge(challenge)
	switch strings.ToLower(scheme) {
	case "basic":
		if c.user == "" && c.pass == "" {
			return "", errors.New("the registry wants credentials, and its Docker config has none")
		}
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.user+":"+c.pass)), nil
	case "bearer":
		realm := params["realm"]
		if realm == "" {
			return "", errors.New("the registry's challenge names no token service")
		}
		u, err := url.Parse(realm)
		if err != nil {
			return "", fmt.Errorf("the registry's token service %q: %w", realm, err)
		}
		q := u.Query()
		if s := params["service"]; s != "" {
			q.Set("service", s)
		}
		scope := params["scope"]
		if scope == "" || !strings.Contains(scope, "push") {
			scope = "repository:" + c.repo + ":pull,push"
		}
		q.Set("scope", scope)
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return "", err
		}
		if c.user != "" || c.pass != "" {
			req.SetBasicAuth(c.user, c.pass)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return "", fmt.Errorf("asking the registry's token service: %w", err)
		}
		defer drain(resp)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("the registry's token service answered %s", resp.Status)
		}
		var tok struct {
			Token       string `json:"token"`
			AccessToken string `json:"access_token"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&tok); err != nil {
			return "", fmt.Errorf("the registry's token: %w", err)
		}
		if tok.Token == "" {
			tok.Token = tok.AccessToken
		}
		if tok.Token == "" {
			return "", errors.New("the registry's token service gave no token")
		}
		return "Bearer " + tok.Token, nil
	}
	return "", fmt.Errorf("the registry asks for credentials in a way not understood: %q", challenge)
}

// parseChallenge splits a WWW-Authenticate header: its scheme and its key="value" params.
func parseChallenge(h string) (string, map[string]string) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimLeft(strings.TrimSpace(rest), ",") {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, `"`) {
			end := strings.Index(v[1:], `"`)
			if end < 0 {
				params[k] = v[1:]
				break
			}
			params[k], rest = v[1:1+end], v[2+end:]
		} else {
			val, after, _ := strings.Cut(v, ",")
			params[k], rest = strings.TrimSpace(val), after
		}
	}
	return scheme, params
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}

// statusError is the error of an unexpected answer, with the registry's message.
func statusError(what string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	msg := strings.TrimSpace(string(body))
	if msg != "" {
		return fmt.Errorf("%s: the registry answered %s: %s", what, resp.Status, msg)
	}
	return fmt.Errorf("%s: the registry answered %s", what, resp.Status)
}

func (c *registryClient) url(parts ...string) string {
	return c.base + "/v2/" + c.repo + "/" + strings.Join(parts, "/")
}

// location is an upload's Location header resolved against the registry, with the
// digest added to its query when there is one.
func (c *registryClient) location(resp *http.Response, digest string) (string, error) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", errors.New("the registry gave the upload no location")
	}
	base, _ := url.Parse(c.base + "/")
	u, err := base.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("the upload's location %q: %w", loc, err)
	}
	if digest != "" {
		q := u.Query()
		q.Set("digest", digest)
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// startUpload begins a blob upload; it returns where to send the blob.
func (c *registryClient) startUpload(ctx context.Context) (string, error) {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		return http.NewRequest(http.MethodPost, c.url("blobs", "uploads")+"/", nil)
	})
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", statusError("starting an upload", resp)
	}
	drain(resp)
	return c.location(resp, "")
}

// pushBlob uploads what write writes, streamed, and returns its digest.
func (c *registryClient) pushBlob(ctx context.Context, write func(io.Writer) error) (string, int64, error) {
	loc, err := c.startUpload(ctx)
	if err != nil {
		return "", 0, err
	}
	pr, pw := io.Pipe()
	h := sha256.New()
	counter := &countingWriter{}
	go func() { pw.CloseWithError(write(io.MultiWriter(pw, h, counter))) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, loc, pr)
	if err != nil {
		pr.CloseWithError(err)
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		pr.CloseWithError(err)
		return "", 0, err
	}
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
		pr.CloseWithError(errors.New("upload refused"))
		return "", 0, statusError("uploading", resp)
	}
	drain(resp)
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if loc, err = c.location(resp, digest); err != nil {
		return "", 0, err
	}
	resp, err = c.do(ctx, func() (*http.Request, error) { return http.NewRequest(http.MethodPut, loc, nil) })
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusCreated {
		return "", 0, statusError("finishing an upload", resp)
	}
	drain(resp)
	return digest, counter.n, nil
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// pushManifest puts a manifest under tag and returns its digest.
func (c *registryClient) pushManifest(ctx context.Context, tag, mediaType string, body []byte) (string, error) {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPut, c.url("manifests", tag), bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", mediaType)
		}
		return req, err
	})
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusCreated {
		return "", statusError("putting the manifest", resp)
	}
	drain(resp)
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// manifest is the manifest of digest, checked against it.
func (c *registryClient) manifest(ctx context.Context, digest, mediaType string) ([]byte, error) {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodGet, c.url("manifests", digest), nil)
		if err == nil {
			req.Header.Set("Accept", mediaType)
		}
		return req, err
	})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError("getting the manifest", resp)
	}
	defer drain(resp)
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		return nil, fmt.Errorf("the manifest's digest is %s, not %s", got, digest)
	}
	return body, nil
}

// blob reads the blob of digest into read; it fails when the blob is not what its digest
// says, which read may only learn at the end.
func (c *registryClient) blob(ctx context.Context, digest string, read func(io.Reader) error) error {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		return http.NewRequest(http.MethodGet, c.url("blobs", digest), nil)
	})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return statusError("getting a blob", resp)
	}
	defer drain(resp)
	h := sha256.New()
	tee := io.TeeReader(resp.Body, h)
	if err := read(tee); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
		return fmt.Errorf("the blob's digest is %s, not %s", got, digest)
	}
	return nil
}
