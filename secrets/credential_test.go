package secrets_test

import (
	"testing"

	"github.com/mcp-switchboard/switchboard/secrets"
)

func TestLooksLikeCredential(t *testing.T) {
	for key, want := range map[string]bool{
		"GITHUB_TOKEN":                   true,
		"GITHUB_PERSONAL_ACCESS_TOKEN":   true,
		"accessToken":                    true,
		"ACCESSTOKEN":                    true,
		"API_KEY":                        true,
		"apiKey":                         true,
		"APIKey":                         true,
		"X-Api-Key":                      true,
		"OPENAI_APIKEY":                  true,
		"AWS_ACCESS_KEY_ID":              true,
		"DB_PASSWORD":                    true,
		"MYSQL_PWD_PASSWD":               true,
		"passphrase":                     true,
		"CLIENT_SECRET":                  true,
		"secrets":                        true,
		"GOOGLE_APPLICATION_CREDENTIALS": true,
		"Authorization":                  true,
		"Proxy-Authorization":            true,
		"AUTH":                           true,
		"authn_header":                   true,
		"X-Auth-Token":                   true,
		"SSH_KEYS":                       true,

		"KEYBOARD_LAYOUT":        false,
		"TOKENIZERS_PARALLELISM": false,
		"AUTHOR_NAME":            false,
		"PATH":                   false,
		"HOME":                   false,
		"PWD":                    false,
		"Content-Type":           false,
		"LOG_LEVEL":              false,
		"":                       false,
		"tokenizer":              false,
		"Accept":                 false,
	} {
		if got := secrets.LooksLikeCredential(key); got != want {
			t.Errorf("LooksLikeCredential(%q) = %v, want %v", key, got, want)
		}
	}
}
