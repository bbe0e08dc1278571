package tools

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// The content block types, as MCP names them.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResource     = "resource"
	ContentResourceLink = "resource_link"
)

// Content is one model-facing content block, shaped as MCP's content
// blocks so that MCP tool results pass through unchanged:
//
//	{"type":"text","text":"..."}
//	{"type":"image","data":"<base64>","mimeType":"image/png"}
//	{"type":"audio","data":"<base64>","mimeType":"audio/wav"}
//	{"type":"resource","resource":{"uri":"file:///x","mimeType":"text/plain","text":"..."}}
//	{"type":"resource_link","uri":"file:///x","name":"x","description":"...","mimeType":"..."}
//
// Content is a plain value of strings: copying it copies everything, which
// is what makes results values (see [Result]). Build blocks with [Text],
// [Image], [Audio], [EmbeddedText], [EmbeddedBlob] and [Link]; fields that
// do not belong to Type are ignored when marshalling.
//
// A resource block's embedded resource is held flat, in URI, MIMEType and
// Text (a text resource) or Data (a binary one, base64: the wire's "blob"),
// so a block stays a small value with no nested pointers.
type Content struct {
	// Type is one of the Content* constants.
	Type string
	// Text is the text of a text block, or of a resource block's text
	// resource.
	Text string
	// Data is the base64-encoded bytes of an image or audio block, or of a
	// resource block's binary resource.
	Data string
	// MIMEType is the media type of an image, audio, resource or
	// resource_link block.
	MIMEType string
	// URI is the resource's URI (resource and resource_link blocks).
	URI string
	// Name, Title and Description describe a resource_link block.
	Name        string
	Title       string
	Description string
}

// wireResource is a resource block's embedded resource on the wire.
type wireResource struct {
	URI      string  `json:"uri"`
	MIMEType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
}

// Text returns a text block.
func Text(s string) Content { return Content{Type: ContentText, Text: s} }

// Image returns an image block; data is base64-encoded.
func Image(data, mimeType string) Content {
	return Content{Type: ContentImage, Data: data, MIMEType: mimeType}
}

// Audio returns an audio block; data is base64-encoded.
func Audio(data, mimeType string) Content {
	return Content{Type: ContentAudio, Data: data, MIMEType: mimeType}
}

// EmbeddedText returns a resource block embedding a text resource.
func EmbeddedText(uri, mimeType, text string) Content {
	return Content{Type: ContentResource, URI: uri, MIMEType: mimeType, Text: text}
}

// EmbeddedBlob returns a resource block embedding a binary resource; blob
// is base64-encoded.
func EmbeddedBlob(uri, mimeType, blob string) Content {
	return Content{Type: ContentResource, URI: uri, MIMEType: mimeType, Data: blob}
}

// Link returns a resource_link block.
func Link(uri, name, description, mimeType string) Content {
	return Content{Type: ContentResourceLink, URI: uri, Name: name, Description: description, MIMEType: mimeType}
}

type wireContent struct {
	Type        string        `json:"type"`
	Text        *string       `json:"text,omitempty"`
	Data        string        `json:"data,omitempty"`
	MIMEType    string        `json:"mimeType,omitempty"`
	URI         string        `json:"uri,omitempty"`
	Name        string        `json:"name,omitempty"`
	Title       string        `json:"title,omitempty"`
	Description string        `json:"description,omitempty"`
	Resource    *wireResource `json:"resource,omitempty"`
}

// MarshalJSON writes the MCP shape of the block: only the fields of its
// type (a text block always has "text", even when empty).
func (c Content) MarshalJSON() ([]byte, error) {
	w := wireContent{Type: c.Type}
	switch c.Type {
	case ContentText:
		w.Text = &c.Text
	case ContentImage, ContentAudio:
		w.Data, w.MIMEType = c.Data, c.MIMEType
	case ContentResource:
		r := wireResource{URI: c.URI, MIMEType: c.MIMEType}
		if c.Data != "" {
			r.Blob = &c.Data
		} else {
			r.Text = &c.Text
		}
		w.Resource = &r
	case ContentResourceLink:
		w.URI, w.Name, w.Title, w.Description, w.MIMEType = c.URI, c.Name, c.Title, c.Description, c.MIMEType
	default:
		return nil, fmt.Errorf("tools: content block of unknown type %q", c.Type)
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an MCP content block.
func (c *Content) UnmarshalJSON(b []byte) error {
	var w wireContent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = Content{Type: w.Type, Data: w.Data, MIMEType: w.MIMEType, URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description}
	if w.Text != nil {
		c.Text = *w.Text
	}
	if r := w.Resource; r != nil {
		if r.Text != nil && r.Blob != nil {
			return fmt.Errorf("tools: resource block has both text and blob")
		}
		c.URI, c.MIMEType = r.URI, r.MIMEType
		if r.Text != nil {
			c.Text = *r.Text
		}
		if r.Blob != nil {
			c.Data = *r.Blob
		}
	}
	return nil
}

// Validate reports whether the block is lossless, well-formed content: a
// known type, the fields its type requires, and valid UTF-8 in every
// string (JSON encoders silently replace invalid UTF-8, so such a block
// would not reach the model or the session log as the tool wrote it).
func (c Content) Validate() error {
	if err := c.check(); err != nil {
		return fmt.Errorf("tools: invalid content: %w", err)
	}
	return nil
}

// check is Validate without the package prefix, for messages that place
// the block (content[i]).
func (c Content) check() error {
	var strs []string
	switch c.Type {
	case ContentText:
		strs = []string{c.Text}
	case ContentImage, ContentAudio:
		if c.Data == "" || c.MIMEType == "" {
			return fmt.Errorf("%s block needs data and mimeType", c.Type)
		}
		strs = []string{c.Data, c.MIMEType}
	case ContentResource:
		if c.URI == "" {
			return fmt.Errorf("resource block needs resource.uri")
		}
		if c.Text != "" && c.Data != "" {
			return fmt.Errorf("resource block has both text and blob")
		}
		strs = []string{c.URI, c.MIMEType, c.Text, c.Data}
	case ContentResourceLink:
		if c.URI == "" || c.Name == "" {
			return fmt.Errorf("resource_link block needs uri and name")
		}
		strs = []string{c.URI, c.Name, c.Title, c.Description, c.MIMEType}
	default:
		return fmt.Errorf("content block of unknown type %q", c.Type)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%s block contains invalid UTF-8", c.Type)
		}
	}
	return nil
}
