package concourse

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

// varSourceConfig checks a var source's config as Concourse's credential manager of its
// type does when the pipeline is set (atc/creds/<type>: the factory's NewInstance, then
// the manager's Validate), at the first problem, as Concourse stops there.
func (v *validator) varSourceConfig(path Path, s VarSourceConfig) {
	cpath := path.Child(Key("config"))
	cfg, isMap := s.Config.(map[string]any)
	if !isMap {
		// ssm's and secretsmanager's configs are decoded by mapstructure, which takes
		// nothing as an empty map.
		if s.Config != nil || (s.Type != "ssm" && s.Type != "secretsmanager") {
			v.errorf(cpath, "var source %q of type %s needs a config map", s.Name, s.Type)
		}
		return
	}
	var problem string
	var at Path
	switch s.Type {
	case "dummy":
		if _, ok := cfg["vars"].(map[string]any); !ok {
			problem, at = "a dummy var source's config needs `vars`, a map of var names to values", cpath.Child(Key("vars"))
		}
	case "idtoken":
		problem, at = idTokenConfig(cfg, cpath)
	case "vault", "ssm", "secretsmanager":
		problem, at = managerConfig(managerKeys[s.Type], cfg, cpath)
		if problem == "" {
			problem, at = managerRules(s.Type, cfg, cpath)
		}
	}
	if problem != "" {
		v.errorf(at, "var source %q: %s", s.Name, problem)
	}
}

// idTokenConfig is the idtoken manager's NewManager and Validate.
func idTokenConfig(cfg map[string]any, at Path) (string, Path) {
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		val, kpath := cfg[k], at.Child(Key(k))
		s, isString := val.(string)
		switch k {
		case "audience":
			list, ok := val.([]any)
			if !ok || slices.ContainsFunc(list, func(a any) bool { _, ok := a.(string); return !ok }) {
				return "audience must be a list of strings", kpath
			}
		case "subject_scope":
			switch {
			case !isString:
				return "subject_scope must be a string", kpath
			case s != "" && s != "team" && s != "pipeline" && s != "instance" && s != "job":
				return fmt.Sprintf("invalid subject_scope %q: use team, pipeline, instance or job", s), kpath
			}
		case "expires_in":
			if !isString {
				return "expires_in must be a string (a duration such as 1h)", kpath
			}
			d, err := time.ParseDuration(s)
			switch {
			case err != nil:
				return fmt.Sprintf("invalid expires_in %q: use a duration such as 1h", s), kpath
			case d > 24*time.Hour:
				return "expires_in must be at most 24h", kpath
			}
		case "algorithm":
			if !isString || (s != "RS256" && s != "ES256") {
				return "algorithm must be RS256 or ES256", kpath
			}
		default:
			return fmt.Sprintf("unknown setting %q of an idtoken var source%s", k, suggest(k, idTokenKeys)), kpath
		}
	}
	return "", nil
}

var idTokenKeys = map[string]bool{"audience": true, "subject_scope": true, "expires_in": true, "algorithm": true}

// keyKind is what a credential manager's config key holds.
type keyKind int

const (
	stringKey keyKind = iota
	boolKey
	durationKey
	stringsKey
	stringMapKey
)

// managerKeys are the config keys of the managers whose config Concourse decodes with
// mapstructure (their struct fields' tags, or the field's name), which refuses any
// other key and a value of another type.
var managerKeys = map[string]map[string]keyKind{
	"vault": {
		"url": stringKey, "path_prefix": stringKey, "lookup_templates": stringsKey, "shared_path": stringKey,
		"namespace": stringKey, "login_timeout": durationKey, "query_timeout": durationKey,
		"enable_kv_mount_cache": boolKey, "disable_srv_lookup": boolKey,
		"ca_cert": stringKey, "cacertfile": stringKey, "capath": stringKey, "client_cert": stringKey,
		"clientcertfile": stringKey, "client_key": stringKey, "clientkeyfile": stringKey,
		"server_name": stringKey, "insecure_skip_verify": boolKey,
		"client_token": stringKey, "client_token_path": stringKey, "auth_backend": stringKey,
		"auth_backend_max_ttl": durationKey, "auth_retry_max": durationKey, "auth_retry_initial": durationKey,
		"auth_params": stringMapKey,
	},
	"ssm": {
		"access_key": stringKey, "secret_key": stringKey, "session_token": stringKey, "region": stringKey,
		"pipeline_secret_template": stringKey, "team_secret_template": stringKey, "shared_path": stringKey,
	},
	"secretsmanager": {
		"access_key": stringKey, "secret_key": stringKey, "session_token": stringKey, "region": stringKey,
		"pipeline_secret_template": stringKey, "team_secret_template": stringKey, "shared_secret_template": stringKey,
	},
}

// managerConfig checks a config's keys and the types of their values.
func managerConfig(keys map[string]keyKind, cfg map[string]any, at Path) (string, Path) {
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		kind, known := keys[strings.ToLower(k)]
		if !known {
			return fmt.Sprintf("unknown config key %q%s", k, suggest(k, boolSet(keys))), at.Child(Key(k))
		}
		if !isKind(cfg[k], kind) {
			return fmt.Sprintf("%s must be %s", k, keyKindName[kind]), at.Child(Key(k))
		}
	}
	return "", nil
}

var keyKindName = map[keyKind]string{
	stringKey: "a string", boolKey: "a boolean", durationKey: "a duration such as 1m",
	stringsKey: "a list of strings", stringMapKey: "a map of strings",
}

func isKind(val any, kind keyKind) bool {
	strs := func(vals []any) bool {
		return !slices.ContainsFunc(vals, func(x any) bool { _, ok := x.(string); return !ok })
	}
	switch kind {
	case boolKey:
		_, ok := val.(bool)
		return ok
	case durationKey:
		// mapstructure reads a number as nanoseconds.
		if _, ok := val.(float64); ok {
			return true
		}
		s, ok := val.(string)
		_, err := time.ParseDuration(s)
		return ok && err == nil
	case stringsKey:
		list, ok := val.([]any)
		return ok && strs(list)
	case stringMapKey:
		m, ok := val.(map[string]any)
		return ok && strs(slices.Collect(maps.Values(m)))
	}
	_, ok := val.(string)
	return ok
}

func boolSet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// managerRules are the Validate of the managers whose config managerConfig checks.
func managerRules(typ string, cfg map[string]any, at Path) (string, Path) {
	str := func(k string) string { s, _ := cfg[k].(string); return s }
	if typ == "vault" {
		if _, err := url.Parse(str("url")); err != nil {
			return fmt.Sprintf("invalid url: %v", err), at.Child(Key("url"))
		}
		if _, set := cfg["path_prefix"]; set && str("path_prefix") == "" {
			return "path_prefix must not be empty", at.Child(Key("path_prefix"))
		}
		if str("client_token") == "" && str("client_token_path") == "" && str("auth_backend") == "" {
			return "give client_token, client_token_path or auth_backend", at
		}
		return "", nil
	}
	// AWS: no credentials (they come from the web node's environment), or a key pair.
	if str("access_key") == "" && str("secret_key") == "" && str("session_token") == "" {
		return "", nil
	}
	if str("access_key") == "" {
		return "give access_key too: a secret_key or a session_token needs it", at
	}
	if str("secret_key") == "" {
		return "give secret_key too: access_key needs it", at
	}
	return "", nil
}
