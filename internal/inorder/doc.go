// Package inorder works on a stream of items on every CPU and hands the results on in the
// items' order (Run): analyze formats findings with it, ingest cuts audit logs into batches
// (the chunks of JSON lines, the documents of cloud envelopes).
package inorder
