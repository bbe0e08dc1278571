package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testIssuer is an OAuth issuer for tests: a JWKS endpoint with one RSA
// key, and a signer of access tokens.
type testIssuer struct {
	url  string
	key  *rsa.PrivateKey
	srv  *httptest.Server
	kid  string
	name string
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &testIssuer{key: key, kid: "k1", name: "https://issuer.test"}
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": iss.kid, "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
	}}})
	iss.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	t.Cleanup(iss.srv.Close)
	iss.url = iss.srv.URL + "/jwks.json"
	return iss
}

// token signs claims (with defaults for iss, aud, sub, exp) with key.
func (i *testIssuer) token(t *testing.T, key *rsa.PrivateKey, claims jwt.MapClaims) string {
	t.Helper()
	c := jwt.MapClaims{"iss": i.name, "aud": "dsh-test", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = i.kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// JWT access tokens are validated against the issuer's JWKS: a valid one
// serves (the go-sdk client), an expired one, a wrong audience, a wrong
// issuer, another key's signature, alg none, a missing expiry or a
// missing scope are refused (401); the 401 points at the
// protected-resource metadata, which is served.
func TestHTTP_JWTAgainstAJWKS(t *testing.T) {
	t.Setenv(tokenEnv, "")
	iss := newTestIssuer(t)
	cfg := testServerConfig(t, map[string]any{"http": map[string]any{
		"jwt":      map[string]any{"jwksUrl": iss.url, "issuer": iss.name, "audience": "dsh-test", "scopes": []string{"mcp"}},
		"resource": "http://127.0.0.1/mcp",
	}})
	s := startServe(t, cfg, "127.0.0.1:0")
	good := iss.token(t, iss.key, jwt.MapClaims{"scope": "read mcp"})
	cs, err := connect(t, s.url, good, nil)
	if err != nil {
		t.Fatalf("valid JWT: %v\n%s", err, s.stderr.String())
	}
	if r := callEcho(t, cs, "jwt"); resultText(r) != "jwt" {
		t.Errorf("call: %+v", r)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": iss.name, "aud": "dsh-test", "sub": "alice", "scope": "mcp", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	for name, tok := range map[string]string{
		"expired":        iss.token(t, iss.key, jwt.MapClaims{"scope": "mcp", "exp": time.Now().Add(-time.Hour).Unix()}),
		"wrong audience": iss.token(t, iss.key, jwt.MapClaims{"scope": "mcp", "aud": "someone-else"}),
		"wrong issuer":   iss.token(t, iss.key, jwt.MapClaims{"scope": "mcp", "iss": "https://evil.test"}),
		"other key":      iss.token(t, other, jwt.MapClaims{"scope": "mcp"}),
		"no expiry":      iss.token(t, iss.key, jwt.MapClaims{"scope": "mcp", "exp": nil}),
		"no scope":       iss.token(t, iss.key, jwt.MapClaims{}),
		"no subject":     iss.token(t, iss.key, jwt.MapClaims{"scope": "mcp", "sub": nil}),
		"alg none":       none,
		"garbage":        "a.b.c",
	} {
		code, sid, body := post(t, s.url, initBody, bearer(tok))
		if code != http.StatusUnauthorized || sid != "" {
			t.Errorf("%s: %d %q %s", name, code, sid, body)
		}
	}
	// The 401 names the metadata document, which names the issuer.
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if wa := resp.Header.Get("WWW-Authenticate"); !strings.Contains(wa, `resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("WWW-Authenticate %q", wa)
	}
	for _, p := range []string{".well-known/oauth-protected-resource", ".well-known/oauth-protected-resource/mcp"} {
		resp, err := noKeepAlive.Get(s.url + p)
		if err != nil {
			t.Fatal(err)
		}
		var meta map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if resp.StatusCode != 200 || meta["resource"] != "http://127.0.0.1/mcp" || !strings.Contains(strings.Join(toStrings(meta["authorization_servers"]), ","), iss.name) {
			t.Errorf("%s: %d %v", p, resp.StatusCode, meta)
		}
	}
}

func toStrings(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
