package checkpoint

import (
	"reflect"
	"testing"
)

func TestMergeEffectsGroupsTurnsThatSayTheSame(t *testing.T) {
	t.Parallel()
	w := func(turn, what string) Warning {
		return Warning{Kind: WarnEffectsOutside, Turn: turn, Message: effectsPrefix + "turn " + turn + " " + what}
	}
	other := Warning{Kind: "changed_outside_turns", Path: "a.txt"}
	in := []Warning{w("cp1", "ran shell commands that could write X"), other, w("cp2", "ran shell commands with the sandbox off"), w("cp3", "ran shell commands that could write X")}
	got := MergeEffects(in)
	want := []Warning{
		{Kind: WarnEffectsOutside, Message: effectsPrefix + "turns cp1, cp3 ran shell commands that could write X"},
		other,
		w("cp2", "ran shell commands with the sandbox off"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MergeEffects =\n%+v\nwant\n%+v", got, want)
	}
	if in[0].Turn != "cp1" || in[0].Message != effectsPrefix+"turn cp1 ran shell commands that could write X" {
		t.Fatalf("MergeEffects changed its input: %+v", in[0])
	}
}
