package mutation

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Figures are a sample's rates: the detectors' kills among all mutants and among those a unit test
// sees (witnessed: the mutant changes behaviour someone pinned).
type Figures struct {
	Judged             int                 `json:"judged"`
	Killed             int                 `json:"killed"`
	Hung               int                 `json:"hung"`
	Witnessed          int                 `json:"witnessed"`       // the unit tests fail on it
	KilledWitnessed    int                 `json:"killedWitnessed"` // of those, killed by the oracle
	WitnessRun         bool                `json:"witnessRun"`
	ByOperator         map[Operator][2]int `json:"byOperator"` // killed, judged
	KilledBy           map[string]int      `json:"killedBy"`   // repro, explore, crash
	SurvivorsWitnessed int                 `json:"survivorsWitnessed"`
	Unwitnessed        int                 `json:"survivorsUnwitnessed"`
}

// Figure computes s's rates.
func (s *Sample) Figure() Figures {
	f := Figures{ByOperator: map[Operator][2]int{}, KilledBy: map[string]int{}}
	for _, r := range s.Results {
		f.Judged++
		k := f.ByOperator[r.Op]
		k[1]++
		if r.Fate == Killed {
			f.Killed++
			f.KilledBy[r.KilledBy]++
			k[0]++
		}
		f.ByOperator[r.Op] = k
		if r.Fate == Hung {
			f.Hung++
		}
		if r.Witness != nil {
			f.WitnessRun = true
			if *r.Witness {
				f.Witnessed++
				if r.Fate == Killed {
					f.KilledWitnessed++
				}
			}
			if r.Fate != Killed {
				if *r.Witness {
					f.SurvivorsWitnessed++
				} else {
					f.Unwitnessed++
				}
			}
		}
	}
	return f
}

func pct(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%d %%", (100*a+b/2)/b)
}

// Report writes the figures, the rates by operator and the survivors grouped by file and function
// with their diffs: the list of what the detectors cannot see.
func (s *Sample) Report(w io.Writer, what string) {
	f := s.Figure()
	fmt.Fprintf(w, "mutants sample: %d judged, drawn from %d mutation points (%d more drawn did not compile); %s\n", f.Judged, s.Points, s.Stillborn, what)
	fmt.Fprintf(w, "detector kill rate, all mutants:       %d of %d (%s)", f.Killed, f.Judged, pct(f.Killed, f.Judged))
	if f.Killed > 0 {
		fmt.Fprintf(w, ": %d by repro all, %d by explore, %d by a crash of the binary", f.KilledBy["repro"], f.KilledBy["explore"], f.KilledBy["crash"])
	}
	if f.Hung > 0 {
		fmt.Fprintf(w, "; %d hung (no verdict, counted as not killed)", f.Hung)
	}
	fmt.Fprintln(w)
	if f.WitnessRun {
		fmt.Fprintf(w, "detector kill rate, witnessed mutants: %d of %d (%s)   (witnessed: the unit tests fail on it, %d of %d)\n",
			f.KilledWitnessed, f.Witnessed, pct(f.KilledWitnessed, f.Witnessed), f.Witnessed, f.Judged)
	}
	fmt.Fprint(w, "by operator (killed/judged):")
	for _, op := range Operators {
		if k, ok := f.ByOperator[op]; ok {
			fmt.Fprintf(w, " %s %d/%d;", op, k[0], k[1])
		}
	}
	fmt.Fprintln(w)
	var surv []Result
	for _, r := range s.Results {
		if r.Fate != Killed {
			surv = append(surv, r)
		}
	}
	if len(surv) == 0 {
		return
	}
	sort.SliceStable(surv, func(i, j int) bool {
		if surv[i].File != surv[j].File {
			return surv[i].File < surv[j].File
		}
		if surv[i].Func != surv[j].Func {
			return surv[i].Func < surv[j].Func
		}
		return surv[i].Start < surv[j].Start
	})
	fmt.Fprintf(w, "\nsurvivors (%d), by file and function; [W] a unit test fails on it, [-] none does:\n", len(surv))
	file, fn := "", ""
	for _, r := range surv {
		if r.File != file {
			file, fn = r.File, ""
			fmt.Fprintf(w, "%s\n", file)
		}
		if r.Func != fn {
			fn = r.Func
			fmt.Fprintf(w, "  %s\n", fn)
		}
		mark := "   "
		if r.Witness != nil {
			mark = "[-]"
			if *r.Witness {
				mark = "[W]"
			}
		}
		fate := ""
		if r.Fate == Hung {
			fate = " (hung)"
		}
		fmt.Fprintf(w, "    %s %s%s", mark, r.ID, fate)
		if r.WitTests != "" {
			fmt.Fprintf(w, "   tests: %s", r.WitTests)
		}
		fmt.Fprintln(w)
		for _, l := range strings.Split(strings.TrimRight(r.Diff, "\n"), "\n")[3:] {
			fmt.Fprintf(w, "        %s\n", l)
		}
	}
}

// Line is one judged mutant's progress line.
func Line(i int, r Result) string {
	fate := "SURVIVED"
	switch r.Fate {
	case Killed:
		fate = "killed by " + r.KilledBy + ": " + r.Detail
	case Hung:
		fate = "HUNG: " + r.Detail
	}
	wit := ""
	if r.Witness != nil {
		wit = "  unit tests: pass"
		if *r.Witness {
			wit = "  unit tests: FAIL"
		}
	}
	return fmt.Sprintf("%3d %-44s %5.1f s  %s%s\n", i, r.ID, r.Seconds, fate, wit)
}
