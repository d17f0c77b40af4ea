# bash completion for ranksim (installed as bash-completion/completions/ranksim)
_ranksim()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    local commands="run sweep runs report explain trace plot diff prune list import match help version"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    case "$prev" in
        --db|--trace|--requests|--model-config|-o)
            COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --hardware)
            COMPREPLY=($(compgen -W "$(ranksim list hardware 2>/dev/null | awk 'NR > 1 {print $1}')" -f -- "$cur"))
            return ;;
        --timeline)
            COMPREPLY=($(compgen -W "full collectives none" -- "$cur")); return ;;
        --format)
            COMPREPLY=($(compgen -W "fr nccl hccl auto" -- "$cur")); return ;;
    esac
    if [[ "$cur" == -* ]]; then
        # the command's own options, as its --help lists them
        COMPREPLY=($(compgen -W "$(ranksim "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u)" -- "$cur"))
        return
    fi
    case "$cmd" in
        list) COMPREPLY=($(compgen -W "models hardware backends" -- "$cur")) ;;
        help) COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
        run|sweep|match|import) COMPREPLY=($(compgen -f -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "latest" -- "$cur")) ;;
    esac
}
complete -o filenames -F _ranksim ranksim
