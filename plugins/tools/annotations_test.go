package tools_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestAnnotationsAreFrozenAtRegistration(t *testing.T) {
	h := host.New()
	root := h.Root()
	defer root.Fiber().Dispose()
	reg := tools.New(root)
	a := &tools.Annotations{Title: "Look", ReadOnly: true, Trusted: true}
	def := tools.Definition{Name: "look", Description: "Look.", Annotations: a,
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return tools.TextOutput("ok"), nil }}
	if _, err := reg.Register(root, def); err != nil {
		t.Fatal(err)
	}
	a.ReadOnly, a.Title = false, "changed" // the caller's value changes afterwards
	got, _ := reg.Get("look", "")
	if b := got.Annotations(); b == nil || !b.ReadOnly || b.Title != "Look" {
		t.Fatalf("registered annotations = %+v", b)
	}
	got.Annotations().Trusted = false // a copy
	if !got.Annotations().Trusted || !got.Definition().Annotations.Trusted {
		t.Fatal("Annotations or Definition returned the registry's own value")
	}
	plain := def
	plain.Name, plain.Annotations = "plain", nil
	if _, err := reg.Register(root, plain); err != nil {
		t.Fatal(err)
	}
	if p, _ := reg.Get("plain", ""); p.Annotations() != nil {
		t.Fatalf("plain = %+v", p.Annotations())
	}
}

func TestDescribeAnnotations(t *testing.T) {
	for _, tc := range []struct {
		a    *tools.Annotations
		want string
	}{
		{nil, ""},
		{&tools.Annotations{ReadOnly: true, Trusted: true}, "read-only, closed-world (trusted)"},
		{&tools.Annotations{Destructive: true, OpenWorld: true}, "destructive, open-world (untrusted hints)"},
		{&tools.Annotations{Idempotent: true}, "additive, idempotent, closed-world (untrusted hints)"},
	} {
		if got := tools.DescribeAnnotations(tc.a); got != tc.want {
			t.Errorf("DescribeAnnotations(%+v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}
