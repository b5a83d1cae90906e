// Package configwatch tells which file-system events may change the
// config: it watches every directory whose entries decide what the config
// path reads (its directory and parent, the directory of each symlink met
// resolving it, the resolved file's directory and parent) and the pin
// file's, resolves the path again on every event and watches a replaced
// directory again.
package configwatch
