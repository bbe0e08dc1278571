package schema_test

import (
	"fmt"

	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// Describe a tool's arguments, derive the JSON Schema the model is shown,
// and check a call's arguments against it.
func Example() {
	spec := schema.Spec{
		"path":  {Type: schema.TypeString, Required: true, Description: "File to read"},
		"limit": {Type: schema.TypeInteger},
	}
	js, err := spec.JSONSchema()
	fmt.Println(string(js), err)
	vs := schema.ValidateArgs(spec, []byte(`{"limit":"10"}`))
	fmt.Println(&schema.ArgsError{Tool: "read", Violations: vs})
	fmt.Println(schema.ValidateArgs(spec, []byte(`{"path":"a.txt","limit":10}`)) == nil)
	// Output:
	// {"type":"object","properties":{"limit":{"type":"integer"},"path":{"type":"string","description":"File to read"}},"required":["path"]} <nil>
	// invalid arguments for tool "read":
	// - /limit: expected integer, got string
	// - /path: required property is missing
	// true
}

func ExampleSpec_JSONSchema() {
	spec := schema.Spec{
		"path":   {Type: "string", Required: true, Description: "Absolute file path"},
		"offset": {Type: "number"},
		"limit":  {Type: "number"},
	}
	out, err := spec.JSONSchema()
	fmt.Println(string(out), err)
	// Output:
	// {"type":"object","properties":{"limit":{"type":"number"},"offset":{"type":"number"},"path":{"type":"string","description":"Absolute file path"}},"required":["path"]} <nil>
}

func ExampleFromStruct() {
	type args struct {
		Command string  `json:"command" desc:"The command to run." dsh:"required"`
		Shell   string  `json:"shell" dsh:"enum=bash|sh,default=bash"`
		Timeout *uint16 `json:"timeout"`
	}
	spec, err := schema.FromStruct[args]()
	if err != nil {
		panic(err)
	}
	out, _ := spec.JSONSchema()
	fmt.Println(string(out))
	// Output:
	// {"type":"object","properties":{"command":{"type":"string","description":"The command to run."},"shell":{"type":"string","enum":["bash","sh"],"default":"bash"},"timeout":{"type":"integer","minimum":0,"maximum":65535}},"required":["command"]}
}

func ExampleValidateArgs() {
	spec := schema.Spec{
		"path":  {Type: "string", Required: true},
		"limit": {Type: "number"},
	}
	vs := schema.ValidateArgs(spec, []byte(`{"limit":"10"}`))
	fmt.Println(&schema.ArgsError{Tool: "read_file", Violations: vs})
	// Output:
	// invalid arguments for tool "read_file":
	// - /limit: expected number, got string
	// - /path: required property is missing
}

func ExampleAssertSupportedOutputSchema() {
	err := schema.AssertSupportedOutputSchema([]byte(`{
	  "type": "object",
	  "properties": {"name": {"type": "string", "pattern": "^a"}, "tags": {"type": ["array", "list"]}},
	  "required": ["name", "age"]
	}`))
	fmt.Println(err)
	// Output:
	// unsupported output schema:
	// - /properties/name/pattern: unsupported keyword "pattern"
	// - /properties/tags/type/1: unsupported type "list"
	// - /required/1: required property "age" is not declared in properties
}

func ExampleValidateStructuredValue() {
	s := []byte(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"integer"}}},"required":["items"]}`)
	for _, v := range schema.ValidateStructuredValue(s, []byte(`{"items":[1,2.5,"x"]}`)) {
		fmt.Println(v)
	}
	// Output:
	// /items/1: expected integer, got number with a fractional part
	// /items/2: expected integer, got string
}
