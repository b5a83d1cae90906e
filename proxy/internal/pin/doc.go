// Package pin keeps the pins of tool definitions: the hash of each tool's
// whole published definition as first seen or approved, checked at every
// listing (a changed definition is a rug pull: reported, and withheld in
// block mode until approved). With sanitize.pinFile they live in a file
// written in batches and durably (a temporary file, synced, renamed, the
// directory synced), read again when someone else changes it
// (`switchboard pins approve`), never for the store's own writes.
package pin
