package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// valueKind says what a flag's value completes to.
type valueKind int

const (
	noValue   valueKind = iota // a bool flag
	freeValue                  // typed by hand: a duration, a number, a URL
	fileValue
	dirValue
	wordValue     // one of flagWords
	strategyValue // a comma-separated list of strategyWords
)

// flagWords are the values of the flags that take one of a few words.
var flagWords = map[string][]string{
	"backends":       {"auto", "process", "docker", "kube", "external"},
	"engine":         {"real", "sim"},
	"docker-network": {"auto", "published", "host"},
	"kube-network":   {"auto", "host", "pod"},
}

// fileFlags and dirFlags take a file's or a directory's path.
var (
	fileFlags = []string{"kubeconfig", "binary", "experiment", "access-log"}
	dirFlags  = []string{"out", "results"}
)

func kindOf(f *flag.Flag) valueKind {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return noValue
	}
	switch {
	case f.Name == "strategies":
		return strategyValue
	case flagWords[f.Name] != nil:
		return wordValue
	case slices.Contains(fileFlags, f.Name):
		return fileValue
	case slices.Contains(dirFlags, f.Name):
		return dirValue
	}
	return freeValue
}

// shells are the shells lbchaos completion writes a script for.
var shells = []string{"bash", "zsh", "fish"}

// cmdCompletion is lbchaos completion bash|zsh|fish.
func cmdCompletion(args []string, stdout io.Writer) error {
	pos, err := parseArgs(newFlagSet("completion"), args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 || !slices.Contains(shells, pos[0]) {
		return &exitError{2, fmt.Errorf("completion takes one shell, bash, zsh or fish, got %q", pos)}
	}
	switch pos[0] {
	case "bash":
		writeBashCompletion(stdout)
	case "zsh":
		// zsh runs the bash script through its bash completion emulation.
		fmt.Fprint(stdout, "#compdef lbchaos\n# zsh completion for lbchaos: source <(lbchaos completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n")
		writeBashCompletion(stdout)
	case "fish":
		writeFishCompletion(stdout)
	}
	return nil
}

func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// flagsByKind returns c's flags as --name, grouped by what their value
// completes to, and --help.
func (c *command) flagsByKind() (all []string, byKind map[valueKind][]*flag.Flag) {
	byKind = map[valueKind][]*flag.Flag{}
	c.flagSet().VisitAll(func(f *flag.Flag) {
		all = append(all, "--"+f.Name)
		byKind[kindOf(f)] = append(byKind[kindOf(f)], f)
	})
	return append(all, "--help"), byKind
}

// bashOperands completes a command's operands in the bash script; the
// command itself is "${COMP_WORDS[0]}".
var bashOperands = map[operands]string{
	experiment: `COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" list 2>/dev/null | cut -d' ' -f1)" -- "$cur"))
            compopt -o filenames 2>/dev/null
            COMPREPLY+=($(compgen -f -X '!*.y*ml' -- "$cur") $(compgen -d -- "$cur"))`,
	runDir: `compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -d -- "$cur") $(compgen -f -X '!*.json' -- "$cur"))`,
	signalName:  `COMPREPLY=($(compgen -W "STOP CONT" -- "$cur"))`,
	commandName: `COMPREPLY=($(compgen -W "` + strings.Join(commandNames(), " ") + `" -- "$cur"))`,
	shellName:   `COMPREPLY=($(compgen -W "` + strings.Join(shells, " ") + `" -- "$cur"))`,
	listName:    `COMPREPLY=($(compgen -W "` + strings.Join(listTopics, " ") + `" -- "$cur"))`,
}

// bashStrategies completes the last name of a comma-separated list of
// strategies (word, the word at the cursor), and trims each reply of
// what precedes $cur in word (readline replaces only $cur).
var bashStrategies = `        local pre= head=${word%"$cur"}
        [[ $word == *,* ]] && pre=${word%,*},
        COMPREPLY=($(compgen -P "$pre" -W "` + strings.Join(strategyWords(), " ") + `" -- "${word##*,}"))
        [[ -n $head ]] && COMPREPLY=("${COMPREPLY[@]#"$head"}")
        compopt -o nospace 2>/dev/null; return 0`

func writeBashCompletion(w io.Writer) {
	fmt.Fprintf(w, `# bash completion for lbchaos: source <(lbchaos completion bash)
_lbchaos() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "%s --help --version" -- "$cur"))
        return 0
    fi
    # Readline breaks words at ':' (COMP_WORDBREAKS), so nginx:least_conn
    # arrives as nginx, :, least_conn: word joins it back, and prev is the
    # word before it.
    local word=$cur j=$COMP_CWORD
    while [[ $j -gt 2 && ( ${COMP_WORDS[j]} == : || ${COMP_WORDS[j-1]} == : ) ]]; do
        j=$((j - 1)); word=${COMP_WORDS[j]}$word
    done
    prev=${COMP_WORDS[j-1]}
    case "${COMP_WORDS[1]} ${prev#--}" in
`, strings.Join(commandNames(), " "))
	// The value of the flag before the cursor.
	for _, c := range commands {
		_, byKind := c.flagsByKind()
		for _, kind := range []valueKind{wordValue, strategyValue, fileValue, dirValue, freeValue} {
			var cases []string
			for _, f := range byKind[kind] {
				cases = append(cases, fmt.Sprintf(`"%s %s"|"%s -%s"`, c.name, f.Name, c.name, f.Name))
				switch kind {
				case wordValue:
					fmt.Fprintf(w, "    %s)\n        COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return 0 ;;\n",
						cases[len(cases)-1], strings.Join(flagWords[f.Name], " "))
				case strategyValue:
					fmt.Fprintf(w, "    %s)\n%s ;;\n", cases[len(cases)-1], bashStrategies)
				}
			}
			if len(cases) == 0 || kind == wordValue || kind == strategyValue {
				continue
			}
			var action string
			switch kind {
			case fileValue:
				action = `compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return 0`
			case dirValue:
				action = `compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return 0`
			case freeValue:
				action = `return 0`
			}
			fmt.Fprintf(w, "    %s)\n        %s ;;\n", strings.Join(cases, "|"), action)
		}
	}
	fmt.Fprint(w, "    esac\n    case ${COMP_WORDS[1]} in\n")
	for _, c := range commands {
		all, _ := c.flagsByKind()
		fmt.Fprintf(w, "    %s)\n        if [[ $cur == -* ]]; then\n            COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n",
			c.name, strings.Join(all, " "))
		if op := bashOperands[c.operands]; op != "" {
			fmt.Fprintf(w, "        else\n            %s\n", op)
		}
		fmt.Fprint(w, "        fi ;;\n")
	}
	fmt.Fprint(w, "    esac\n    return 0\n}\ncomplete -F _lbchaos lbchaos\n")
}

// fishOperands completes a command's operands in the fish script.
var fishOperands = map[operands]string{
	experiment:  `-F -a '(lbchaos list 2>/dev/null | string replace -r "\s.*" "")'`,
	runDir:      `-F`,
	signalName:  `-x -a 'STOP CONT'`,
	commandName: `-x -a '` + strings.Join(commandNames(), " ") + `'`,
	shellName:   `-x -a '` + strings.Join(shells, " ") + `'`,
	listName:    `-x -a '` + strings.Join(listTopics, " ") + `'`,
}

func writeFishCompletion(w io.Writer) {
	fmt.Fprint(w, "# fish completion for lbchaos: lbchaos completion fish > ~/.config/fish/completions/lbchaos.fish\ncomplete -c lbchaos -f\n")
	fmt.Fprint(w, "complete -c lbchaos -n __fish_use_subcommand -l help -d 'the usage'\ncomplete -c lbchaos -n __fish_use_subcommand -l version -d 'the version'\n")
	for _, c := range commands {
		fmt.Fprintf(w, "complete -c lbchaos -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.short))
	}
	for _, c := range commands {
		cond := "-n '__fish_seen_subcommand_from " + c.name + "'"
		fmt.Fprintf(w, "complete -c lbchaos %s -l help -d 'the usage of %s'\n", cond, c.name)
		c.flagSet().VisitAll(func(f *flag.Flag) {
			var arg string
			switch kindOf(f) {
			case freeValue:
				arg = " -x"
			case wordValue:
				arg = " -x -a " + fishQuote(strings.Join(flagWords[f.Name], " "))
			case strategyValue:
				// The last name of a comma-separated list.
				arg = " -x -a " + fishQuote(`(__fish_complete_list , "string split , `+strings.Join(strategyWords(), ",")+`")`)
			case fileValue:
				arg = " -r -F"
			case dirValue:
				arg = " -x -a '(__fish_complete_directories)'"
			}
			fmt.Fprintf(w, "complete -c lbchaos %s -l %s%s -d %s\n", cond, f.Name, arg, fishQuote(firstClause(f.Usage)))
		})
		if op := fishOperands[c.operands]; op != "" {
			fmt.Fprintf(w, "complete -c lbchaos %s %s\n", cond, op)
		}
	}
}

// firstClause shortens a flag's usage to a description of a line.
func firstClause(s string) string {
	if i := strings.IndexAny(s, ":;("); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
