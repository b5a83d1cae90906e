package sanitize

// The vocabulary of the word patterns (scan_words.go): every word the
// patterns look for, by token class. Words are skeleton words: lower case
// ASCII, accents dropped (précédentes → precedentes). Besides English it
// holds the words of "ignore (all) previous instructions" in the languages
// written in Latin script that it has been checked against: French, German,
// Spanish, Italian, Portuguese, Dutch and Polish. Languages in other
// scripts are matched on the raw text (scan_foreign.go).

type tokClass uint64

const (
	cNL tokClass = 1 << iota
	cColon
	cLBrack
	cRBrack
	cAt         // '@'
	cTick       // '`'
	cQuote      // '"'
	cVerb       // ignore, disregard, forget …
	cQual       // previous, prior, above, earlier …
	cNoun       // instructions, prompt, rules …
	cWeakQual   // all, your, every
	cStrongNoun // instructions, prompts, programming …
	cNeg        // not, dont, never, stop …
	cObey       // follow, obey
	cEverything // everything, anything, all
	cBefore     // above, before, prior, earlier …
	cRole       // human, assistant
	cSys        // system, sys, admin, administrator
	cSysNoun    // notice, message, override …
	cAttn       // important, urgent, attention …
	cNew        // new, updated, revised …
	cInstr      // instructions, directives, task …
	cYou
	cAre
	cNow
	cPersona // dan, jailbroken, unrestricted …
	cModeWord
	cMode
	cEnabled
	cPrompt
	cChanged
	cEnd
	cDev       // developer
	cLimits    // restrictions, filters, censorship, policies …
	cDo        // do
	cStay      // stay, remain
	cCharacter // character
	cWithout   // without, no
	cInvoke    // call, invoke, run, execute, use …
	cSnake     // an identifier with an underscore: send_message
	cToolNoun  // tool, function, command
	cAddressee // ai, assistant, agent, model, chatbot …
	cAddrVoc   // an addressee followed by ':' or ',', or "whoever"
	cUrgent    // silently, secretly, covertly
	cMust      // must, immediately
	cTell      // tell, mention, inform, notify …
	cAsk       // ask, asking
	cConsent   // confirmation, permission, approval …
	cUser      // user, human, anyone
	cAlready   // already
	cApproved  // approved, authorised, confirmed …
	cLeak      // send, post, upload, forward, reveal, repeat, print …
	cSensitive // password, credentials, api, cookies, history, env …
	cDest      // http, https, pastebin, webhook
	cDestNoun  // url, endpoint: a destination after "to"
	cTo        // to
	cReply     // answer, reply, response, message, output
	cNext      // next
	cYour      // your
)

var wordClasses = func() map[string]tokClass {
	m := map[string]tokClass{}
	add := func(c tokClass, words ...string) {
		for _, w := range words {
			m[w] |= c
		}
	}
	add(cVerb, "ignore", "ignoring", "ignored", "disregard", "disregarding", "forget", "forgetting",
		"override", "overriding", "bypass", "discard", "abandon", "neglect", "dismiss", "nevermind",
		// fr, de, es, it, pt, nl, pl
		"ignorez", "ignorer", "oublie", "oubliez", "oublier", "ignoriere", "ignorieren", "ignoriert",
		"vergiss", "vergesst", "vergessen", "ignora", "ignoren", "ignorar", "olvida", "olvide", "olviden",
		"olvidar", "ignorate", "dimentica", "dimenticate", "esqueca", "esquece", "negeer", "vergeet",
		"zignoruj", "ignoruj", "zapomnij")
	add(cQual, "previous", "previously", "prior", "above", "earlier", "preceding", "former",
		"foregoing", "original", "initial", "existing", "system", "developer", "safety",
		"precedentes", "precedente", "precedents", "anterieures", "anterieurs", "vorherigen", "vorherige",
		"bisherigen", "obigen", "vorigen", "fruheren", "anteriores", "anterior", "precedenti", "vorige",
		"eerdere", "poprzednie", "wczesniejsze")
	add(cWeakQual, "all", "your", "every", "any", "toutes", "tous", "les", "alle", "todas", "todos",
		"las", "los", "tutte", "tutti", "le", "as", "wszystkie", "deine", "ihre", "tes", "vos", "tus")
	add(cStrongNoun, "instruction", "instructions", "prompt", "prompts", "directive", "directives",
		"guideline", "guidelines", "programming", "training", "anweisungen", "instrucciones",
		"istruzioni", "instrucoes", "instructies", "instrukcje", "consignes")
	add(cNoun, "instruction", "instructions", "prompt", "prompts", "direction", "directions",
		"directive", "directives", "rule", "rules", "guideline", "guidelines", "guidance",
		"context", "message", "messages", "command", "commands", "order", "orders",
		"constraint", "constraints", "restriction", "restrictions", "policy", "policies", "text",
		"input", "conversation", "programming", "training",
		"anweisungen", "anweisung", "vorgaben", "befehle", "regeln", "instrucciones", "indicaciones",
		"reglas", "directivas", "istruzioni", "direttive", "regole", "instrucoes", "regras",
		"instructies", "instrukcje", "polecenia", "consignes", "regles")
	add(cNeg, "not", "dont", "don", "never", "stop", "longer", "cease")
	add(cObey, "follow", "following", "obey", "obeying", "heed")
	add(cEverything, "everything", "anything", "all")
	add(cBefore, "above", "before", "prior", "previously", "earlier", "said")
	add(cRole, "human", "assistant")
	add(cSys, "system", "sys", "admin", "administrator")
	add(cSysNoun, "notice", "message", "alert", "update", "override", "instruction", "instructions",
		"prompt", "note", "announcement", "directive", "warning", "command")
	add(cAttn, "important", "urgent", "attention", "critical", "notice", "warning")
	add(cNew, "new", "updated", "revised", "additional", "changed", "real", "actual", "true", "secret")
	add(cInstr, "instruction", "instructions", "directive", "directives", "orders", "task", "objective",
		"mission", "prompt")
	add(cYou, "you")
	add(cAre, "are", "re")
	add(cNow, "now")
	add(cPersona, "dan", "jailbroken", "jailbreak", "unrestricted", "unfiltered", "uncensored", "evil",
		"developer", "god", "acting", "assistant", "ai", "chatbot", "persona", "roleplaying", "pretending")
	add(cModeWord, "god", "jailbreak", "jailbroken", "dan", "unrestricted", "unfiltered", "uncensored", "evil")
	add(cMode, "mode")
	add(cEnabled, "enabled", "activated", "engaged", "on", "unlocked", "active")
	add(cPrompt, "prompt", "prompts", "instructions", "message")
	add(cChanged, "override", "overridden", "overrides", "updated", "update", "changed", "replaced",
		"reset", "revoked", "disabled")
	add(cEnd, "end")
	addAgentWords(add)
	return m
}()

// addAgentWords adds the words of jailbreaks, of instructions to call
// tools and of requests to leak data.
func addAgentWords(add func(tokClass, ...string)) {
	add(cDev, "developer")
	add(cLimits, "restrictions", "filters", "filter", "censorship", "censored", "limitations",
		"guardrails", "ethics", "morals", "morality", "policies", "policy", "guidelines", "safety",
		"openai", "anthropic")
	add(cDo, "do")
	add(cStay, "stay", "remain")
	add(cCharacter, "character")
	add(cWithout, "without", "no")
	add(cInvoke, "call", "calling", "invoke", "invoking", "run", "execute", "executing", "use", "trigger")
	add(cToolNoun, "tool", "function", "command")
	add(cAddressee, "ai", "assistant", "assistants", "agent", "agents", "model", "models", "llm",
		"chatbot", "bot", "copilot", "claude", "gpt", "chatgpt", "gemini")
	add(cAddrVoc, "whoever")
	add(cUrgent, "silently", "secretly", "covertly", "quietly")
	// "You must call X first", "returns immediately; use get_results" are
	// how documentation speaks: alone, these make a tool or leak
	// instruction weak (see combine).
	add(cMust, "must", "immediately")
	add(cTell, "tell", "telling", "mention", "mentioning", "inform", "informing",
		"notify", "notifying", "alert", "alerting", "warn", "warning")
	// Not asking is secrecy only when what is not asked for is consent:
	// "do not ask the user for confirmation", not "do not ask the user to
	// select a version".
	add(cAsk, "ask", "asking")
	add(cConsent, "confirm", "confirmation", "permission", "approval", "consent", "approve")
	add(cUser, "user", "users", "human", "anyone", "owner")
	add(cAlready, "already")
	add(cApproved, "approved", "authorized", "authorised", "confirmed", "consented", "agreed", "granted")
	add(cLeak, "send", "sending", "post", "upload", "forward", "email", "transmit", "exfiltrate", "leak",
		"attach", "include", "append", "appended", "paste", "share", "collect", "reveal", "repeat",
		"print", "output", "dump", "disclose")
	add(cSensitive, "password", "passwords", "passwd", "credential", "credentials", "secret", "secrets",
		"token", "tokens", "key", "keys", "apikey", "cookie", "cookies", "history", "conversation", "env",
		"environment", "ssh", "rsa", "credit", "card", "prompt", "contacts", "ssn")
	add(cDest, "http", "https", "pastebin", "webhook", "webhooks")
	add(cDestNoun, "url", "urls", "endpoint")
	add(cTo, "to")
	add(cReply, "answer", "answering", "reply", "replying", "response", "responding", "respond",
		"message", "output", "summary")
	add(cNext, "next")
	add(cYour, "your")
}
