package sanitize

import "strings"

// "Ignore the previous instructions" in languages whose script the
// skeleton cannot read (it folds Cyrillic look-alikes to Latin and the rest
// to otherByte): a verb stem and a noun stem close together, in either
// order, in the raw text. Cyrillic stems leave out their first letter, so
// that one stem matches both letter cases ("Игнорируй", "игнорируй").

// foreignWindow is how far apart, in bytes, a verb and a noun may be.
const foreignWindow = 60

var (
	foreignVerbs = []string{
		"忽略", "无视", "無視", "忽视", "忽視", "不要理会", "不理会", "忘记", "忘掉", "忘記", // zh, ja
		"忘れ",       // ja
		"무시", "잊어", // ko
		"гнорир", "абудь", "абыть", "гноруй", // ru, uk
		"تجاهل",  // ar
		"अनदेखा", // hi
	}
	foreignNouns = []string{
		"指令", "指示", "提示词", "規則", "规则", "命令", "プロンプト", "ルール",
		"지시", "명령", "지침", "프롬프트",
		"нструкци", "казани", "равила", "ромпт", "нструкці",
		"التعليمات", "تعليمات", "الأوامر",
		"निर्देश",
	}
)

// scanForeign reports PatternIgnorePrevious for a verb stem of
// foreignVerbs within foreignWindow bytes of a noun stem of foreignNouns.
func scanForeign(text string) patternSet {
	for _, v := range foreignVerbs {
		for off := 0; ; {
			i := strings.Index(text[off:], v)
			if i < 0 {
				break
			}
			i += off
			lo, hi := max(0, i-foreignWindow), min(len(text), i+len(v)+foreignWindow)
			for _, n := range foreignNouns {
				if strings.Contains(text[lo:hi], n) {
					return pIgnorePrevious | pStrong
				}
			}
			off = i + len(v)
		}
	}
	return 0
}
