package streamhttp

import "github.com/modelcontextprotocol/go-sdk/jsonrpc"

// unanswered is a POST's calls not answered yet. Most POSTs carry one
// call, whose ID it keeps without a map; a batch's IDs are in a map, so
// that a batch of many calls is checked for duplicates in linear time.
type unanswered struct {
	one  jsonrpc.ID          // the one call's ID while many is nil; not valid: none
	many map[jsonrpc.ID]bool // a batch's
}

// expecting is an empty set for a POST of n calls.
func expecting(n int) unanswered {
	if n > 1 {
		return unanswered{many: make(map[jsonrpc.ID]bool, n)}
	}
	return unanswered{}
}

// add adds id, unless it is there already (false).
func (u *unanswered) add(id jsonrpc.ID) bool {
	switch {
	case u.many != nil:
		if u.many[id] {
			return false
		}
		u.many[id] = true
	case !u.one.IsValid():
		u.one = id
	case u.one == id:
		return false
	default:
		u.many = map[jsonrpc.ID]bool{u.one: true, id: true}
	}
	return true
}

// has reports whether id is unanswered.
func (u *unanswered) has(id jsonrpc.ID) bool {
	if u.many != nil {
		return u.many[id]
	}
	return u.one.IsValid() && u.one == id
}

// remove takes id out.
func (u *unanswered) remove(id jsonrpc.ID) {
	if u.many != nil {
		delete(u.many, id)
	} else if u.one == id {
		u.one = jsonrpc.ID{}
	}
}

// len is how many are unanswered.
func (u *unanswered) len() int {
	switch {
	case u.many != nil:
		return len(u.many)
	case u.one.IsValid():
		return 1
	}
	return 0
}
