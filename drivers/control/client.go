package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// httpc bounds one request: queryAsyncJobResult's wait is at most 10 minutes (Handler).
var httpc = &http.Client{Timeout: 15 * time.Minute}

// Call sends the command cmd with params to the control endpoint at base, with token, and decodes
// its JSON answer into out (nil: the answer is dropped).
func Call(ctx context.Context, base, token, cmd string, params url.Values, out any) error {
	return Do(ctx, base+"/"+cmd+"?"+params.Encode(), "GET", token, out)
}

// Do sends a request (with "Authorization: Bearer token" unless token is "") and decodes the JSON
// answer into out. It is Call's transport, and the fault hooks' and the hypervisors' truth's too,
// which answer as the endpoint does (WriteJSON, errors as {"error": …}).
func Do(ctx context.Context, u, method, token string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return &APIError{Msg: e.Error}
		}
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// APIError is an error the endpoint answered with (as opposed to one reaching it).
type APIError struct{ Msg string }

func (e *APIError) Error() string { return e.Msg }
