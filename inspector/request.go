package inspector

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// request calls one API endpoint the client package has no method for (the
// watch page) and answers its error as a *client.Error, as the client does.
func request(ctx context.Context, nc *nats.Conn, subject string, req, reply proto.Message) error {
	data, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("inspector: encode %s: %w", subject, err)
	}
	msg, err := nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: subject, Data: data})
	if err != nil {
		return fmt.Errorf("inspector: %s: %w", subject, err)
	}
	if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
		n, _ := strconv.Atoi(code)
		detail := &memoryv1.ErrorDetail{}
		if proto.Unmarshal(msg.Data, detail) != nil || detail.GetMessage() == "" {
			return &client.Error{Code: n, Message: msg.Header.Get("Nats-Service-Error")}
		}
		return &client.Error{Code: n, Field: detail.GetField(), Message: detail.GetMessage()}
	}
	if err := proto.Unmarshal(msg.Data, reply); err != nil {
		return fmt.Errorf("inspector: decode reply of %s: %w", subject, err)
	}
	return nil
}
