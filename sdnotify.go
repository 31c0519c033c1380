package main

import (
	"fmt"
	"net"
)

// sdNotify tells systemd how the service is doing, as sd_notify(3) does:
// "READY=1" once it serves (Type=notify waits for it), "STOPPING=1" when it
// begins to stop. socket is $NOTIFY_SOCKET, set by systemd; "" means that
// nobody listens, and nothing is sent. A socket name that starts with "@"
// is in the abstract namespace, which Go's net package understands as is.
func sdNotify(socket, state string) error {
	if socket == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}
