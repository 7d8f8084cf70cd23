package estate

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// protocol is a wire protocol of the AWS APIs.
type protocol int

const (
	ec2Query  protocol = iota // EC2's query protocol, XML answers
	awsQuery                  // the query protocol of IAM and STS
	awsJSON10                 // DynamoDB
	awsJSON11                 // Secrets Manager
)

// request is one API request as the estate reads it.
type request struct {
	scope Scope
	proto protocol
	form  url.Values // the query protocols' parameters
	body  []byte     // the JSON protocols' document
}

// apiError is an error answer: an HTTP status, an AWS error code and a
// message.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

// throttleOf is the throttling answer of a service.
func throttleOf(service string) *apiError {
	switch service {
	case "ec2":
		return &apiError{503, "RequestLimitExceeded", "Request limit exceeded."}
	case "iam", "sts":
		return &apiError{400, "Throttling", "Rate exceeded"}
	default:
		return &apiError{400, "ThrottlingException", "Rate exceeded"}
	}
}

func unknownAction(req *request) *apiError {
	switch req.proto {
	case ec2Query, awsQuery:
		return &apiError{400, "InvalidAction", fmt.Sprintf("The action %s is not valid for this web service.", req.scope.Action)}
	default:
		return &apiError{400, "UnknownOperationException", "Unknown operation " + req.scope.Action}
	}
}

func badParameter(req *request, format string, args ...any) *apiError {
	msg := fmt.Sprintf(format, args...)
	switch {
	case req.proto == ec2Query:
		return &apiError{400, "InvalidParameterValue", msg}
	case req.proto == awsQuery:
		return &apiError{400, "InvalidInput", msg}
	case req.scope.Service == "dynamodb":
		return &apiError{400, "ValidationException", msg}
	default:
		return &apiError{400, "InvalidParameterException", msg}
	}
}

// accessKeyPrefix starts every access key id the estate knows.
const accessKeyPrefix = "AKIA"

// AccessKeyID returns the access key id whose requests the estate takes
// for account's, a 12-digit account id: "AKIA" followed by the account.
// The secret key may be anything.
func AccessKeyID(account string) string { return accessKeyPrefix + account }

var accountID = regexp.MustCompile(`^[0-9]{12}$`)

// accountOf returns the account of an access key id made by AccessKeyID.
func accountOf(keyID string) (string, bool) {
	acct, ok := strings.CutPrefix(keyID, accessKeyPrefix)
	return acct, ok && accountID.MatchString(acct)
}

// credentialScope reads the access key id, region and service of a SigV4
// Authorization header:
//
//	AWS4-HMAC-SHA256 Credential=AKIA.../20240101/us-east-1/ec2/aws4_request, SignedHeaders=..., Signature=...
func credentialScope(auth string) (key, region, service string, ok bool) {
	_, cred, found := strings.Cut(auth, "Credential=")
	if !found {
		return "", "", "", false
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(strings.TrimSpace(cred), "/")
	if len(parts) != 5 || parts[4] != "aws4_request" {
		return "", "", "", false
	}
	return parts[0], parts[2], parts[3], true
}

// readRequest reads the scope and parameters of r. On an error it still
// returns the request with what it read, so that the error is written in
// the request's protocol.
func readRequest(r *http.Request) (*request, error) {
	req := &request{proto: awsQuery}
	target := r.Header.Get("X-Amz-Target")
	if target != "" {
		req.proto = awsJSON11
		if strings.Contains(r.Header.Get("Content-Type"), "json-1.0") {
			req.proto = awsJSON10
		}
		req.scope.Action = target[strings.LastIndexByte(target, '.')+1:]
	}
	key, region, service, ok := credentialScope(r.Header.Get("Authorization"))
	req.scope.Region, req.scope.Service = region, service
	if service == "ec2" && req.proto == awsQuery {
		req.proto = ec2Query
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return req, &apiError{400, "IncompleteBody", err.Error()}
	}
	if target != "" {
		req.body = body
	} else {
		if req.form, err = url.ParseQuery(string(body)); err != nil {
			return req, &apiError{400, "MalformedQueryString", err.Error()}
		}
		req.scope.Action = req.form.Get("Action")
	}
	if !ok {
		return req, &apiError{403, "MissingAuthenticationToken", "Request is missing Authentication Token"}
	}
	if req.scope.Account, ok = accountOf(key); !ok {
		switch req.proto {
		case ec2Query:
			return req, &apiError{401, "AuthFailure", "AWS was not able to validate the provided access credentials"}
		case awsQuery:
			return req, &apiError{403, "InvalidClientTokenId", "The security token included in the request is invalid."}
		default:
			return req, &apiError{400, "UnrecognizedClientException", "The security token included in the request is invalid."}
		}
	}
	return req, nil
}

// decode reads the JSON document of the request into v.
func (req *request) decode(v any) error {
	if len(req.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(req.body, v); err != nil {
		return &apiError{400, "SerializationException", err.Error()}
	}
	return nil
}

// intParam reads a query parameter, def when it is absent.
func (req *request) intParam(name string, def int) (int, error) {
	s := req.form.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, badParameter(req, "Invalid value '%s' for %s", s, name)
	}
	return n, nil
}

// requestIDString writes a request id in the form of AWS's.
func requestIDString(id uint64) string {
	return fmt.Sprintf("5f3c0b6e-0000-4000-8000-%012x", id)
}

func itoa(n int) string { return strconv.Itoa(n) }

// esc escapes s for XML text.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Namespaces of the query protocols' answers.
const (
	ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"
	iamNamespace = "https://iam.amazonaws.com/doc/2010-05-08/"
)

// writeError writes err as the request's protocol writes errors.
func (req *request) writeError(w http.ResponseWriter, id uint64, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{500, "InternalFailure", err.Error()}
	}
	rid := requestIDString(id)
	switch req.proto {
	case ec2Query:
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		w.WriteHeader(ae.status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>`,
			ae.code, esc(ae.msg), rid)
	case awsQuery:
		kind := "Sender"
		if ae.status >= 500 {
			kind = "Receiver"
		}
		w.Header().Set("Content-Type", "text/xml")
		w.Header().Set("X-Amzn-Requestid", rid)
		w.WriteHeader(ae.status)
		fmt.Fprintf(w, `<ErrorResponse xmlns="%s">
  <Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error>
  <RequestId>%s</RequestId>
</ErrorResponse>`, iamNamespace, kind, ae.code, esc(ae.msg), rid)
	default:
		code := ae.code
		if req.proto == awsJSON10 {
			code = "com.amazonaws.dynamodb.v20120810#" + code
		}
		req.writeJSON(w, rid, ae.status, map[string]string{"__type": code, "message": ae.msg})
	}
}

// writeResult writes an action's answer: for the query protocols, the
// XML inside the result element (a string); for the JSON protocols, a
// value to marshal.
func (req *request) writeResult(w http.ResponseWriter, id uint64, body any) {
	rid := requestIDString(id)
	act := req.scope.Action
	switch req.proto {
	case ec2Query:
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<%[1]sResponse xmlns="%[2]s">
  <requestId>%[3]s</requestId>
%[4]s</%[1]sResponse>`, act, ec2Namespace, rid, body)
	case awsQuery:
		w.Header().Set("Content-Type", "text/xml")
		w.Header().Set("X-Amzn-Requestid", rid)
		fmt.Fprintf(w, `<%[1]sResponse xmlns="%[2]s">
  <%[1]sResult>
%[4]s  </%[1]sResult>
  <ResponseMetadata><RequestId>%[3]s</RequestId></ResponseMetadata>
</%[1]sResponse>`, act, iamNamespace, rid, body)
	default:
		req.writeJSON(w, rid, http.StatusOK, body)
	}
}

func (req *request) writeJSON(w http.ResponseWriter, rid string, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = 500, []byte(`{"__type":"InternalFailure","message":"cannot encode the answer"}`)
	}
	ct := "application/x-amz-json-1.1"
	if req.proto == awsJSON10 {
		ct = "application/x-amz-json-1.0"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Amzn-Requestid", rid)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Pagination: a token is the offset of the page's first item.

func pageToken(offset int) string { return "page-" + strconv.Itoa(offset) }

// parseToken reads a token written by pageToken; "" is offset 0.
func parseToken(req *request, tok string) (int, error) {
	if tok == "" {
		return 0, nil
	}
	s, ok := strings.CutPrefix(tok, "page-")
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n < 0 {
		return 0, badParameter(req, "Invalid pagination token %q", tok)
	}
	return n, nil
}

// page returns the items [from, to) of the page of at most size items of
// n that starts at offset start, and the next page's token ("" on the
// last page).
func page(n, start, size int) (from, to int, next string) {
	from = min(start, n)
	to = min(from+size, n)
	if to < n {
		next = pageToken(to)
	}
	return from, to, next
}
