package dshconfig_test

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/tools"
)

const profileHTTP = `"http": {"tokens": {"ci": {"env": "CI_TOKEN"}, "dev": {"env": "DEV_TOKEN"}},
  "jwt": {"jwksUrl": "https://id.example/jwks", "issuer": "https://id.example", "audience": "dsh"},
  "resource": "https://dsh.example/mcp", "unmapped": "refuse"}`

// Profiles decode with their rules (the top-level grammar), tools mode
// and matches, in file order; an identity resolves to the first profile
// with a matching entry.
func TestProfiles(t *testing.T) {
	cfg, err := dshconfig.Parse("dsh.json", []byte(`{"mcpServers":{"a":{"command":"x"}}, `+profileHTTP+`,
  "profiles": {
    "ci":  {"match": [{"token": "ci"}, {"claim": "groups", "value": "bots"}],
            "permissions": {"allow": ["mcp__a__read"], "defaultMode": "deny"}, "tools": {"mode": "code"}},
    "dev": {"match": [{"token": "dev"}, {"sub": "alice"}, {"claim": "scope", "value": "dsh:dev"}],
            "permissions": {"ask": ["mcp__a__*"]}}
  }}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Unmapped != dshconfig.UnmappedRefuse || len(cfg.Profiles) != 2 {
		t.Fatalf("%+v %+v", cfg.HTTP, cfg.Profiles)
	}
	ci, dev := cfg.Profiles[0], cfg.Profiles[1]
	if ci.Name != "ci" || ci.Key != "profiles.ci" || ci.Mode != tools.Code || ci.Permissions.DefaultMode != permissions.Deny ||
		ci.Permissions.Allow[0] != "mcp__a__read" || len(ci.Match) != 2 || ci.Match[1] != (dshconfig.Match{Claim: "groups", Value: "bots"}) {
		t.Errorf("ci %+v", ci)
	}
	if dev.Mode != "" || dev.Match[1] != (dshconfig.Match{Claim: "sub", Value: "alice"}) {
		t.Errorf("dev %+v", dev)
	}
	for _, tc := range []struct {
		c    dshconfig.Caller
		want int
	}{
		{dshconfig.Caller{Token: "ci"}, 0},
		{dshconfig.Caller{Token: "dev"}, 1},
		{dshconfig.Caller{Token: "other"}, -1},
		{dshconfig.Caller{Claims: map[string]any{"sub": "alice"}}, 1},
		{dshconfig.Caller{Claims: map[string]any{"sub": "alice", "groups": []any{"x", "bots"}}}, 0}, // first profile wins
		{dshconfig.Caller{Claims: map[string]any{"sub": "bob", "scope": "read dsh:dev"}}, 1},
		{dshconfig.Caller{Claims: map[string]any{"sub": "bob", "groups": "bots-not"}}, -1},
		{dshconfig.Caller{Claims: map[string]any{"sub": "bob", "groups": []any{1, "bot"}}}, -1},
		{dshconfig.Caller{Claims: map[string]any{"token": "ci"}}, -1}, // a claim named token is no token
		{dshconfig.Caller{}, -1},
	} {
		if got := dshconfig.ResolveProfile(cfg.Profiles, tc.c); got != tc.want {
			t.Errorf("%+v: profile %d, want %d", tc.c, got, tc.want)
		}
	}
}

// A profile that does not parse refuses the whole file, each problem
// named by its place.
func TestProfilesProblems(t *testing.T) {
	for _, tc := range []struct{ name, profiles, want string }{
		{"bad rule", `{"ci": {"match": [{"token": "ci"}], "permissions": {"allow": ["mcp__a__x", "mcp__a__y(", "ok"]}}}`, "dsh.json: profiles.ci.permissions.allow[1]: "},
		{"bad mode", `{"ci": {"match": [{"token": "ci"}], "permissions": {"defaultMode": "maybe"}}}`, "profiles.ci.permissions.defaultMode: "},
		{"unknown key", `{"ci": {"match": [{"token": "ci"}], "permissions": {"alow": []}}}`, "profiles.ci.permissions.alow: unknown key"},
		{"no permissions", `{"ci": {"match": [{"token": "ci"}]}}`, "profiles.ci.permissions: is required"},
		{"no match", `{"ci": {"permissions": {}}}`, "profiles.ci.match: is required"},
		{"empty match", `{"ci": {"match": [], "permissions": {}}}`, "profiles.ci.match: must be a non-empty array"},
		{"unknown token", `{"ci": {"match": [{"token": "nobody"}], "permissions": {}}}`, "profiles.ci.match[0].token: \"nobody\" is not a token of http.tokens"},
		{"token twice", `{"ci": {"match": [{"token": "ci"}], "permissions": {}}, "b": {"match": [{"token": "ci"}], "permissions": {}}}`, "profiles.b.match[0].token: token \"ci\" is already mapped to profile \"ci\""},
		{"two forms", `{"ci": {"match": [{"token": "ci", "sub": "x"}], "permissions": {}}}`, "profiles.ci.match[0]: must be one of"},
		{"claim without value", `{"ci": {"match": [{"claim": "groups"}], "permissions": {}}}`, "profiles.ci.match[0]: must be one of"},
		{"claim without jwt", `{"ci": {"match": [{"sub": "alice"}], "permissions": {}}}`, "profiles.ci.match[0]: matches a JWT claim, but http.jwt is not configured"},
		{"default name", `{"default": {"match": [{"token": "ci"}], "permissions": {}}}`, "profiles.default: \"default\" is the name of the top-level permissions"},
		{"bad name", `{"a b": {"match": [{"token": "ci"}], "permissions": {}}}`, "profiles.a b: a profile name"},
		{"tools mode", `{"ci": {"match": [{"token": "ci"}], "permissions": {}, "tools": {"mode": "fast"}}}`, "profiles.ci.tools.mode: must be"},
		{"not an object", `[]`, "profiles: must be an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"mcpServers":{"a":{"command":"x"}}, "http": {"tokens": {"ci": {"env": "CI_TOKEN"}}}, "profiles": ` + tc.profiles + `}`
			cfg, err := dshconfig.Parse("dsh.json", []byte(body), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (cfg %v), want %q", err, cfg, tc.want)
			}
		})
	}
	_, err := dshconfig.Parse("dsh.json", []byte(`{"mcpServers":{"a":{"command":"x"}}, "http": {"unmapped": "allow"}}`), nil)
	if err == nil || !strings.Contains(err.Error(), "http.unmapped: must be") {
		t.Errorf("unmapped: %v", err)
	}
}

// FuzzResolveProfile: resolving never panics, is deterministic, and a
// caller matched by a profile's entry gets that profile or an earlier
// one; a token caller never matches a claim entry nor a claim caller a
// token entry.
func FuzzResolveProfile(f *testing.F) {
	f.Add("ci", "groups", "bots", "bots", "sub", "alice", "ci")
	f.Add("", "scope", "a b", "b", "sub", "", "")
	f.Add("x", "groups", "", "", "sub", "x", "x")
	f.Fuzz(func(t *testing.T, tok, claim, claimVal, want, sub, subVal, callerTok string) {
		profiles := []dshconfig.Profile{
			{Name: "a", Match: []dshconfig.Match{{Claim: claim, Value: want}}},
			{Name: "b", Match: []dshconfig.Match{{Token: tok}, {Claim: sub, Value: subVal}}},
		}
		claims := map[string]any{claim: claimVal, "arr": []any{claimVal, 3}}
		for _, c := range []dshconfig.Caller{{Token: callerTok}, {Claims: claims}, {Token: callerTok, Claims: claims}} {
			i := dshconfig.ResolveProfile(profiles, c)
			if j := dshconfig.ResolveProfile(profiles, c); i != j || i < -1 || i > 1 {
				t.Fatalf("%+v: %d then %d", c, i, j)
			}
			for pi, p := range profiles {
				for _, m := range p.Match {
					if m.Matches(c) && (i < 0 || i > pi) {
						t.Fatalf("%+v matches profile %d but resolves to %d", c, pi, i)
					}
					if m.Matches(c) && (m.Token != "") != (c.Token != "") {
						t.Fatalf("%+v crosses kinds with %+v", c, m)
					}
				}
			}
		}
	})
}
