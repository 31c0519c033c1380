#!/usr/bin/env python3
"""Read every message of the real-world corpus with Python's email package.

An independent reading of the fields burner shows, for TestRealWorldCrossCheck
(e2e_corpus_test.go): for each message file under the folder given (one
folder per project), its subject and the display name and address of the
first From mailbox, as Python's modern email API (policy.default) decodes
them (raw 8-bit bytes read as UTF-8, RFC 6532). Prints one JSON object keyed by the file's slash-separated path under
the folder. Standard library only.
"""

import email
import email.policy
import json
import os
import sys


def utf8_header(s):
    """Return s with the raw 8-bit bytes the parser kept (as surrogate
    escapes) read as UTF-8, as RFC 6532 has them; bytes that are not UTF-8
    stay escaped, and come out as U+FFFD in JSON."""
    try:
        return s.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeError:
        return s


def read(path):
    with open(path, "rb") as f:
        msg = email.message_from_binary_file(f, policy=email.policy.default)
    out = {"subject": None, "fromName": "", "fromAddress": "", "errors": []}
    try:
        if msg["subject"] is not None:
            out["subject"] = utf8_header(str(msg["subject"]))
    except Exception as e:  # a header Python cannot parse at all
        out["errors"].append("subject: %r" % e)
    try:
        sender = msg["from"]
        if sender is not None:
            mailboxes = [a for a in sender.addresses]
            if mailboxes:
                out["fromName"] = utf8_header(mailboxes[0].display_name)
                out["fromAddress"] = utf8_header(mailboxes[0].addr_spec)
    except Exception as e:
        out["errors"].append("from: %r" % e)
    return out


def main():
    root = sys.argv[1]
    result = {}
    for project in sorted(os.listdir(root)):
        top = os.path.join(root, project)
        if not os.path.isdir(top):
            continue
        for folder, _, files in os.walk(top):
            for name in files:
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                result[rel] = read(path)
    json.dump(result, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
