// Prints test/fixtures/go-url.json: what Kubernetes' url CEL library
// (k8s.io/apiserver/pkg/cel/library/urls.go, v0.37.2) answers for each input, computed
// with Go's net/url as the library calls it. Run offline with the Go the pinned
// kube-apiserver is built with (go1.26.8):
//
//	go run scripts/url-fixture/main.go > test/fixtures/go-url.json
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
)

type result struct {
	In          string              `json:"in"`
	IsURL       bool                `json:"isURL"`
	Error       string              `json:"error,omitempty"`
	Scheme      string              `json:"scheme,omitempty"`
	Host        string              `json:"host,omitempty"`
	Hostname    string              `json:"hostname,omitempty"`
	Port        string              `json:"port,omitempty"`
	EscapedPath string              `json:"escapedPath,omitempty"`
	Query       map[string][]string `json:"query,omitempty"`
	String      string              `json:"string,omitempty"`
}

// As urls.go's stringToUrl and isURL.
func eval(s string) result {
	r := result{In: s}
	_, err := url.ParseRequestURI(s)
	r.IsURL = err == nil
	if err != nil {
		r.Error = fmt.Sprintf("URL parse error during conversion from string: %v", err)
		return r
	}
	u, err := url.Parse(s)
	if err != nil {
		r.Error = fmt.Sprintf("URL parse error during conversion from string: %v", err)
		return r
	}
	r.Scheme, r.Host, r.Hostname, r.Port = u.Scheme, u.Host, u.Hostname(), u.Port()
	r.EscapedPath, r.Query, r.String = u.EscapedPath(), u.Query(), u.String()
	return r
}

var edges = []string{
	"", "*", " ", "/", "//", "///", "/a", "a", "a/b", "a:b", ":", ":a", "://a", "http:", "http:/", "http://",
	"http:///", "http:////a", "http://a", "http://a/", "HTTP://A.COM/B", "http://a:80", "http://a:", "http://a:8x",
	"http://a:1:2", "http://a::80", "mongodb://h1:1,h2:2/db", "http://[::1]", "http://[::1]:443/x", "http://[::1]:",
	"http://[::1]x", "http://[::1", "http://::1]", "http://[1.2.3.4]", "http://[::ffff:1.2.3.4]", "http://[fe80::1%25en0]:8/",
	"http://[fe80::1%en0]", "http://[fe80::1%25]", "http://[fe80::1%25%65n0]", "http://[fe80::1%25e%20n]", "http://x[::1]",
	"http://[::1]]", "http://[[::1]", "http://[::1]:80:90", "http://[v1.fe]", "http://u:p@h/", "http://u@h", "http://u:p@ss@h",
	"http://u%40:p%3A@h", "http://u%zz@h", "http://u p@h", "http://u/p@h", "http://@h", "http://:@h", "http://h%41", "http://h%c3%a9",
	"http://h%2f", "http://h%25", "http://h%zz", "http://h_o.st", "http://h o", "http://h<o>", "http://h\"o", "http://h\\o",
	"http://é.com/é", "http://h/é?é=é#é", "http://h/a b", "http://h/a%20b", "http://h/a%2fb", "http://h/a%2Fb", "http://h/%zz",
	"http://h/%4", "http://h/%", "http://h/a%", "http://h/%41", "http://h/a;b,c", "http://h/a:b@c", "http://h/*", "http://h/[x]",
	"http://h/a'b", "http://h/a!b", "http://h/a$b&c", "http://h/?", "http://h/??", "http://h/?a?", "http://h?a=1", "http://h/?a=1&a=2&b",
	"http://h/?a=%zz&b=1", "http://h/?a;b=1&c=2", "http://h/?x=a+b%20c", "http://h/?=v", "http://h/?&&", "http://h/?a=b=c",
	"http://h/?%zz=1", "http://h/?a%3Db=c", "http://h/#", "http://h/#f", "http://h/#a%20b", "http://h/#%zz", "http://h/#a#b",
	"http://h/?q#f", "http://h#f", "http://h/p#f?q", "mailto:a@b.c", "mailto:a@b.c?subject=hi", "urn:isbn:0451450523", "file:///etc/hosts",
	"file://host/share", "a+b.c-d://h", "1http://h", "-a://h", "h ttp://h", "http ://h", "ht_tp://h", "/abs/path", "/abs/path?q=1",
	"/abs/path#f", "rel/path", "./rel", "../rel", "?q", "#f", "//host/path", "///path", "http://h/\x7f", "http://h/\x01", "http://h/\t",
	"http://h\n", "data:text/plain,hi", "http://a/b/../c/./d", "HtTpS://ExAmPle.Org:0443/P", "https://example.com:65536",
	"https://example.com:99999999999999999999", "https://user:@example.com", "javascript:alert(1)", "http:opaque?q#f", "http:opaque/x",
	"s3://bucket/key with space", "https://日本.jp/パス?キー=値", "http://h/%E6%97%A5", "http://h/%e6%97%a5", "http://h/\u00a0",
	"http://[::1]/%2F?a=%2F", "http://h/a+b", "http://h/?a+b=c+d", "http://h/?a=1;b=2", "http://%41/", "http://h:%38%30/",
	"http://[::1]:%38%30/", "http://[::1%25lo]", "http://[fe80::1%25%zz]", "http://[fe80::1%25%2f]", "http://[fe80::1%2541]",
	"http://[]", "http://[:::]", "http://[::1%25]x", "ftp://[2001:db8::1]:21/pub", "http://1.2.3.4:80", "http://999.1.1.1",
	// Quoting in errors: non-printable and invalid UTF-8 in IPv6 literals, ports and escapes.
	"http://[\u00a0]", "http://[%ff]", "http://[::%ff]", "http://[::1%25%c3%a9]", "http://[::\u00a0:1]", "http://[::1]:\u00a0",
	"http://h:\u200b/", "http://h\u00a0/", "http://h/%\u00e9", "http://h/%a\u00e9", "http://h/%\u00a0", "http://[\U0001f600]",
	"http://h/\u2028", "http://u\u00e9@h/",
}

var (
	schemes = []string{"http:", "https:", "HTTP:", "ftp:", "a+b.c-d:", "1x:", "", "mailto:", "x_y:", "s3:"}
	auths   = []string{"", "//", "//host", "//host:80", "//host:", "//host:abc", "//[::1]", "//[::1]:8080", "//[fe80::1%25en0]",
		"//[fe80::1%en0]", "//[1.2.3.4]", "//[::1", "//u:p@h", "//u@p@h", "//a:1:2", "//h%41", "//h%c3%a9", "//é.com", "//h_o",
		"//h o", "//[::1]x", "//a[b]", "//@", "//h:8080%30"}
	paths = []string{"", "/", "/a/b", "/a%2fb", "/a b", "/%zz", "/%4", "/é", "rel", "/a;b,c", "/*", "/a:b", "a:b/c", "/%41%42", "/a%2Fb%20c"}
	qs    = []string{"", "?", "?a=1&b=2&a=3", "?a", "?a=%zz&b=1", "?a;b=1", "?x=a+b%20c", "?=v", "?&&", "?é=ü", "??"}
	frags = []string{"", "#f", "#a%20b", "#%zz", "#é", "#a b", "#"}
)

func main() {
	inputs := append([]string{}, edges...)
	rng := rand.New(rand.NewPCG(24, 2026))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	seen := map[string]bool{}
	for _, s := range inputs {
		seen[s] = true
	}
	for len(inputs) < 600 {
		s := pick(schemes) + pick(auths) + pick(paths) + pick(qs) + pick(frags)
		if !seen[s] {
			seen[s] = true
			inputs = append(inputs, s)
		}
	}
	out := make([]result, len(inputs))
	for i, s := range inputs {
		out[i] = eval(s)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
