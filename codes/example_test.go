package codes_test

import (
	"fmt"

	"burner/codes"
)

// Find reads a verification mail as a person does: the code after a
// keyword first, wherever it stands, then the other numbers of four to
// eight digits; a date's year is not a code.
func ExampleFind() {
	subject := "Your sign-in code"
	text := "Hi Alice, your order 7731 ships tomorrow.\n" +
		"Someone (hopefully you) is signing in from Paris on 14 March 2026.\n" +
		"Your verification code is 482913. It expires in 10 minutes."
	fmt.Println(codes.Find(&subject, text))
	// Output: [482913 7731]
}

// A sender whose codes the default rule does not know (letters, a
// prefix) is read with a pattern of one's own: its first group is the
// code.
func ExamplePattern_Match() {
	p, err := codes.Compile(`\bPIN-([A-Z0-9]{6})\b`)
	if err != nil {
		fmt.Println(err)
		return
	}
	found, err := p.Match(nil, "Your PIN-7KX2QF unlocks the door. PIN-7KX2QF again, and PIN-99ZZ11.")
	fmt.Println(found, err)
	// Output: [7KX2QF 99ZZ11] <nil>
}
