package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// browserEnv, set to 1 (as .ci/run does), makes a missing Chromium fail
// the browser tests instead of skipping them.
const browserEnv = "DSH_REQUIRE_BROWSER"

// artifactsEnv names a directory for the browser tests' screenshots
// (default: the test's temporary directory, named in the log).
const artifactsEnv = "DSH_TEST_ARTIFACTS"

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(browserEnv) == "1" {
		t.Fatalf("%s=1 but no chromium on PATH (apt-get install -y chromium)", browserEnv)
	}
	t.Skip("no chromium on PATH (apt-get install -y chromium); set " + browserEnv + "=1 to fail instead")
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a
// context for its first tab; the test's cleanup ends it.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelB()
		cancelA()
	})
	tctx, cancelT := context.WithTimeout(ctx, 3*budget)
	t.Cleanup(cancelT)
	if err := chromedp.Do(tctx); err != nil { // start the browser
		t.Fatalf("start chromium: %v", err)
	}
	return tctx
}

// shots saves screenshots of the journey.
type shots struct {
	t   *testing.T
	dir string
	n   int
}

func newShots(t *testing.T) *shots {
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = t.TempDir()
	} else {
		dir = filepath.Join(dir, t.Name())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return &shots{t: t, dir: dir}
}

func (s *shots) take(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		s.n++
		return chromedp.Void{}, os.WriteFile(filepath.Join(s.dir, fmt.Sprintf("%02d-%s.png", s.n, name)), buf, 0o644)
	}
}

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text reads the text of the first element sel selects.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// A person's journey in a real browser: open the console, log in, see an
// ask appear live, read its card, approve it, watch the call complete in
// the timeline (open in another tab), search for it; then the same with
// reject.
func TestConsole_BrowserJourney(t *testing.T) {
	s, console, _ := consoleServe(t, nil)
	ctx := browser(t)
	shot := newShots(t)
	cs, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}

	do(t, ctx, "log in",
		chromedp.Navigate(console),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		shot.take("login"),
		chromedp.SendKeys(chromedp.CSS("#token"), testConsoleToken),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#no-pending")),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)),
		shot.take("inbox-empty"),
	)
	// The timeline, live, in a second tab of the same browser (same login).
	tl, cancelTL := chromedp.NewContext(ctx)
	defer cancelTL()
	do(t, tl, "open the timeline", chromedp.Navigate(console+"timeline"), chromedp.WaitVisible(chromedp.CSS("#timeline")),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)))

	for _, tc := range []struct {
		answer, button, text, row, code string
	}{
		{"allow", "button.allow", "approve me", "tr.call.ok", "ok"},
		{"reject", "button.reject", "reject me", "tr.call.failed", "APPROVAL_REJECTED"},
	} {
		res := asyncEcho(cs, tc.text)
		do(t, ctx, tc.answer+": the ask appears live",
			chromedp.WaitVisible(chromedp.CSS("article.ask")),
			shot.take(tc.answer+"-pending"),
		)
		card := text(t, ctx, "article.ask pre.card")
		if !strings.Contains(card, tc.text) || !strings.Contains(card, "mcp__t__echo") && !strings.Contains(card, "Echo") {
			t.Fatalf("card: %q", card)
		}
		rule := text(t, ctx, "article.ask .rule")
		if left := text(t, ctx, "article.ask .countdown"); !strings.HasSuffix(left, "s left") || !strings.HasPrefix(left, "59m") && !strings.HasPrefix(left, "60m") {
			t.Fatalf("countdown: %q", left)
		}
		if rule != "mcp__t__echo" {
			t.Fatalf("rule shown: %q", rule)
		}
		do(t, tl, tc.answer+": running in the timeline",
			chromedp.WaitVisible(chromedp.CSS(`tr.call.running[data-tool="mcp__t__echo"]`)),
			shot.take(tc.answer+"-timeline-running"))
		do(t, ctx, tc.answer,
			chromedp.Click(chromedp.CSS(tc.button)),
			chromedp.WaitVisible(chromedp.CSS("#no-pending")),
			shot.take(tc.answer+"-answered"),
		)
		flash := text(t, ctx, "#flash")
		// The answered ask is listed with its fate: applied.
		do(t, ctx, "the answer applied", chromedp.WaitVisible(chromedp.CSS(".recent tr.state-applied")))
		if !strings.Contains(flash, "Answered: "+tc.answer) {
			t.Fatalf("flash: %q", flash)
		}
		r := <-res
		if r.IsError != (tc.answer == "reject") {
			t.Fatalf("%s: call result %+v %q", tc.answer, r.IsError, resultText(r))
		}
		do(t, tl, tc.answer+": completes in the timeline",
			chromedp.WaitNotPresent(chromedp.CSS(`tr.call.running`)),
			chromedp.WaitVisible(chromedp.CSS(tc.row+`[data-tool="mcp__t__echo"] td.code`)),
			shot.take(tc.answer+"-timeline-done"),
		)
		code := text(t, tl, tc.row+` td.code`)
		if code != tc.code {
			t.Fatalf("timeline code: %q, want %q", code, tc.code)
		}
		do(t, ctx, tc.answer+": search",
			chromedp.Navigate(console+"search"),
			chromedp.WaitVisible(chromedp.CSS("#search-form")),
			chromedp.SendKeys(chromedp.CSS("#q-tool"), "mcp__t__*"),
			chromedp.SendKeys(chromedp.CSS("#q-code"), tc.code),
			chromedp.Click(chromedp.CSS("#search-submit")),
			chromedp.WaitVisible(chromedp.CSS("#results tr.call")),
			shot.take(tc.answer+"-search"),
		)
		found := text(t, ctx, "#results")
		do(t, ctx, "back to the inbox", chromedp.Navigate(console), chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)))
		if !strings.Contains(found, "mcp__t__echo") || !strings.Contains(found, tc.code) {
			t.Fatalf("search results: %q", found)
		}
	}
	entries, _ := os.ReadDir(shot.dir)
	if len(entries) < 10 {
		t.Fatalf("%d screenshots", len(entries))
	}
}
