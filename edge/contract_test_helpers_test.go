package edge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
)

// The contract validator is built once from the embedded openapi.yaml and
// shared by every test (building it compiles every schema).
var contract struct {
	once sync.Once
	v    validator.Validator
	err  error
}

func contractValidator() (validator.Validator, error) {
	contract.once.Do(func() {
		doc, err := libopenapi.NewDocument(openapiYAML)
		if err != nil {
			contract.err = fmt.Errorf("parse openapi.yaml: %w", err)
			return
		}
		v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
		if len(errs) > 0 {
			contract.err = fmt.Errorf("build validator: %v", errs)
			return
		}
		contract.v = v
	})
	return contract.v, contract.err
}

// checkContract fails t when a response does not match openapi.yaml for its
// request's path and method: the status must be documented, the body must
// match the schema of that status (types, nullability, required fields, no
// stray fields, enums), and the declared required headers must be present.
// It also checks what the document cannot express: X-Request-Id on every
// response, error.request_id equal to it, and meta.count equal to the
// number of rows. body is the response body already read by the caller.
func checkContract(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	for _, v := range contractViolations(req, resp, body) {
		t.Errorf("contract: %s %s -> %d: %s", req.Method, req.URL.RequestURI(), resp.StatusCode, v)
	}
}

// contractViolations returns every way a response breaks the contract; none
// means it conforms.
func contractViolations(req *http.Request, resp *http.Response, body []byte) []string {
	v, err := contractValidator()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	// The validator reads the body; hand it a private copy.
	r := *resp
	r.Body = io.NopCloser(bytes.NewReader(body))
	if r.Header == nil {
		r.Header = http.Header{}
	}
	if _, errs := v.ValidateHttpResponse(req, &r); len(errs) > 0 {
		if unroutable(errs) && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed) {
			// A request for a path or method the API does not have: the
			// document has no operation to check it against, but the body
			// must still be the error envelope.
			out = append(out, checkErrorEnvelope(body)...)
		} else {
			for _, e := range errs {
				out = append(out, describeViolation(e))
			}
		}
	}
	rid := resp.Header.Get("X-Request-Id")
	if rid == "" {
		out = append(out, "X-Request-Id header missing")
	}
	if !strings.Contains(strings.ToLower(resp.Header.Get("Content-Type")), "json") || len(body) == 0 {
		return out
	}
	var env struct {
		Data  json.RawMessage      `json:"data"`
		Meta  *struct{ Count int } `json:"meta"`
		Error *struct {
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return append(out, fmt.Sprintf("body is not a JSON object: %v", err))
	}
	if env.Error != nil && rid != "" && env.Error.RequestID != rid {
		out = append(out, fmt.Sprintf("error.request_id %q differs from X-Request-Id %q", env.Error.RequestID, rid))
	}
	if env.Meta != nil {
		var rows []json.RawMessage
		if err := json.Unmarshal(env.Data, &rows); err == nil && len(rows) != env.Meta.Count {
			out = append(out, fmt.Sprintf("meta.count is %d but data holds %d rows", env.Meta.Count, len(rows)))
		}
	}
	return out
}

// unroutable reports whether the validator found no operation for the request.
func unroutable(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationSubType == helpers.ValidationMissing || e.ValidationSubType == helpers.ValidationMissingOperation {
			return true
		}
	}
	return false
}

// checkErrorEnvelope checks a body against the ErrorEnvelope shape for a
// response that no operation of the document describes.
func checkErrorEnvelope(body []byte) []string {
	var env struct {
		Error *struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Error == nil {
		return []string{fmt.Sprintf("unroutable request: body is not the error envelope: %s", body)}
	}
	if env.Error.Code == "" || env.Error.Message == "" || env.Error.RequestID == "" {
		return []string{fmt.Sprintf("unroutable request: error envelope has an empty field: %s", body)}
	}
	return nil
}

func describeViolation(e *verrors.ValidationError) string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Reason != "" && e.Reason != e.Message {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	for _, s := range e.SchemaValidationErrors {
		b.WriteString("\n\t- ")
		if s.FieldPath != "" {
			b.WriteString(s.FieldPath)
			b.WriteString(": ")
		}
		b.WriteString(s.Reason)
		if s.KeywordLocation != "" {
			b.WriteString(" (")
			b.WriteString(s.KeywordLocation)
			b.WriteString(")")
		}
	}
	return b.String()
}
