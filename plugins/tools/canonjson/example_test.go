package canonjson_test

import (
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// Arguments every reader decodes alike are accepted and written in one
// canonical form; a document readers disagree on is refused, saying where.
func Example() {
	canon, err := canonjson.CanonicalizeObject([]byte(` {"path": "a.txt", "n": 1.0} `), canonjson.Options{})
	fmt.Println(string(canon), err)
	_, err = canonjson.Canonicalize([]byte(`{"a":1,"\u0061":2}`), canonjson.Options{})
	fmt.Println(err)
	fmt.Println(errors.Is(err, canonjson.ErrNotLossless))
	// Output:
	// {"path":"a.txt","n":1} <nil>
	// non-lossless JSON at /a (byte 7): duplicate object key (readers disagree on first-wins vs last-wins)
	// true
}

func ExampleCanonicalize() {
	out, err := canonjson.Canonicalize([]byte(`{ "b": 1.0, "a": [1e21, -0, "\u003c\u00e9\n"] }`), canonjson.Options{})
	fmt.Println(string(out), err)

	_, err = canonjson.Canonicalize([]byte(`{"id": 9007199254740993}`), canonjson.Options{})
	fmt.Println(err)
	fmt.Println(errors.Is(err, canonjson.ErrNotLossless))
	// Output:
	// {"b":1,"a":[1e+21,0,"<é\n"]} <nil>
	// non-lossless JSON at /id (byte 7): integer 9007199254740993 exceeds 2^53-1 (readers disagree: rounded vs exact)
	// true
}

func ExampleCanonicalizeObject() {
	out, _ := canonjson.CanonicalizeObject([]byte("  "), canonjson.Options{})
	fmt.Println(string(out))
	_, err := canonjson.CanonicalizeObject([]byte(`[1]`), canonjson.Options{})
	fmt.Println(err)
	// Output:
	// {}
	// non-lossless JSON at (root) (byte 0): arguments must be a JSON object, got array
}

func ExampleAppendString() {
	b := []byte(`{"name":`)
	b = canonjson.AppendString(b, "<é>\t\"x\"")
	b = append(b, `,"n":`...)
	b = canonjson.AppendNumber(b, 1e21)
	b = append(b, '}')
	fmt.Println(string(b))
	canon, err := canonjson.Canonicalize(b, canonjson.Options{})
	fmt.Println(string(canon) == string(b), err)
	// Output:
	// {"name":"<é>\t\"x\"","n":1e+21}
	// true <nil>
}
