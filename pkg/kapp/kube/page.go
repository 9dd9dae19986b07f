package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// decodePage decodes a page of a LIST as JSON (its items and its continue
// token) in one pass with the JSON v2 tokenizer: what
// sigs.k8s.io/json.UnmarshalCaseSensitivePreserveInts into
// {metadata.continue, items []map[string]any} gives (integers that fit in
// int64 as int64, other numbers as float64, a repeated name's last value,
// names matched case-sensitively), about twice as fast
// (TestDecodePageMatches).
func decodePage(raw []byte) (items []map[string]any, cont string, err error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if err := readDelim(dec, '{'); err != nil {
		return nil, "", err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, "", err
		}
		switch name.String() {
		case "items":
			if dec.PeekKind() == 'n' {
				_, _ = dec.ReadToken()
				items = nil
				continue
			}
			if err := readDelim(dec, '['); err != nil {
				return nil, "", err
			}
			// A repeated "items" decodes into the first's objects, as
			// encoding/json does (never from an apiserver).
			prev := items
			items = []map[string]any{}
			for i := 0; dec.PeekKind() != ']'; i++ {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, "", err
				}
				m, ok := v.(map[string]any)
				if !ok && v != nil {
					return nil, "", fmt.Errorf("an item is a %T, not an object", v)
				}
				if i < len(prev) && prev[i] != nil && m != nil {
					maps.Copy(prev[i], m)
					m = prev[i]
				}
				items = append(items, m)
			}
			if _, err := dec.ReadToken(); err != nil {
				return nil, "", err
			}
		case "metadata":
			v, err := decodeValue(dec)
			if err != nil {
				return nil, "", err
			}
			switch m := v.(type) {
			case map[string]any:
				if c, ok := m["continue"]; ok {
					s, ok := c.(string)
					if !ok && c != nil {
						return nil, "", fmt.Errorf("metadata.continue is a %T, not a string", c)
					}
					cont = s
				}
			case nil:
			default:
				return nil, "", fmt.Errorf("metadata is a %T, not an object", v)
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return nil, "", err
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, "", err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, "", errors.New("data after the top-level value")
	}
	return items, cont, nil
}

func readDelim(dec *jsontext.Decoder, want jsontext.Kind) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != want {
		return fmt.Errorf("expected %v, got %v", want, tok.Kind())
	}
	return nil
}

// decodeValue decodes one JSON value as encoding/json decodes into an
// interface{} with integers preserved.
func decodeValue(dec *jsontext.Decoder) (any, error) {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			k := name.String() // the token is valid until the next read
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		a := []any{}
		for dec.PeekKind() != ']' {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.ReadToken()
		return a, err
	case '0':
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return number(string(v))
	default: // strings, true, false, null
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		switch tok.Kind() {
		case '"':
			return tok.String(), nil
		case 't', 'f':
			return tok.Bool(), nil
		case 'n':
			return nil, nil
		}
		return nil, fmt.Errorf("unexpected %v", tok.Kind())
	}
}

// number is a JSON number as sigs.k8s.io/json keeps it: an int64 when it
// is an integer that fits, a float64 otherwise.
func number(s string) (any, error) {
	isInt := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			isInt = false
			break
		}
	}
	if isInt {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", s, err)
	}
	return f, nil
}
