# bash completion for cctdb's tools: cct-record, cct-query, cct-import,
# cct-diff, cct-merge and cct-aggregate. Installed once per tool name where bash-completion looks
# (share/bash-completion/completions); also works sourced on its own, without
# the bash-completion package: it uses only bash's own `complete`.
#
# What a tool accepts is read from the tool's own --help, so completion never
# drifts from it: options, cct-query's commands, cct-import's formats, and an
# option's values where its help lists them as a|b|c. Run selectors come
# from the database the command line names (-d DB, --db DB, $CCT_DB, else
# ./cct.db), through `cct-query runs --format csv`.

# "TOOL --help", read once per executable for the shell's life: _cct_complete
# loads it (in the shell itself, not in a subshell, so the copy stays) and
# _cct_help prints it.
_cct_load_help() {
  local exe
  exe=$(type -P "$1") || return 1
  _cct_help_var=_cct_help_${exe//[^A-Za-z0-9]/_}
  if [[ -z ${!_cct_help_var-} ]]; then
    printf -v "$_cct_help_var" '%s' "$(CCT_NO_MALLOC_TUNING=1 "$exe" --help 2>/dev/null)"
  fi
}
_cct_help() {
  printf '%s\n' "${!_cct_help_var-}"
}

# One line per option of TOOL's help: "1" when it takes a value, else "0",
# then its names ("1 -d --db").
_cct_optspec() {
  _cct_help "$1" | awk '/^  -/ {
    head = substr($0, 3); sub(/  .*/, "", head)
    line = (head ~ / arg/) ? "1" : "0"
    n = split(head, part, /[][ ]+/)
    for (i = 1; i <= n; i++) if (part[i] ~ /^-/) line = line " " part[i]
    print line
  }'
}

# The long and short options TOOL's help lists.
_cct_options() {
  _cct_optspec "$1" | cut -d' ' -f2- | tr ' ' '\n'
}

# Whether OPTION of TOOL takes a value ("arg" after it in the help).
_cct_takes_value() {
  _cct_optspec "$1" | grep -qE -- "^1( .*)? $2( |\$)"
}

# The values OPTION's help names: spelled a|b|c, or as clauses "a: ...; b: ...".
_cct_values() {
  local line
  # The option's line and the description's continuation lines.
  line=$(_cct_help "$1" | awk -v opt="$2" '
    /^  -/ { on = 0; head = substr($0, 3); sub(/  .*/, "", head)
             n = split(head, part, /[][ ]+/); for (i = 1; i <= n; i++) if (part[i] == opt) on = 1
             if (on) { sub(/^  [^ ].*arg( \(=[^)]*\))? +/, ""); print; next } }
    on && /^      / { print; next }
    { on = 0 }')
  if [[ $2 == --from ]]; then
    _cct_help "$1" | sed -nE '/^Formats:/,/^$/s/^  ([a-z][a-z0-9-]*) .*/\1/p'
  elif grep -qE '[A-Za-z0-9-]+(\|[A-Za-z0-9-]+)+' <<<"$line"; then
    grep -oE '[A-Za-z0-9-]+(\|[A-Za-z0-9-]+)+' <<<"$line" | tr '|' '\n'
  else
    # "cpu: thread CPU time ...; wall: elapsed time": two or more clauses,
    # each naming its value first.
    tr '\n' ' ' <<<"$line" | awk '{
      gsub(/  +/, " "); n = split($0, clause, /; /); out = ""
      if (n < 2) exit
      for (i = 1; i <= n; i++) {
        c = clause[i]; sub(/^ +/, "", c); sub(/ +$/, "", c)
        if (match(c, /^[a-z][a-z-]*(:|$)/) == 0) exit
        w = substr(c, 1, RLENGTH); sub(/:$/, "", w); out = out " " w
      }
      print out
    }'
  fi
}

# The database the words before the cursor name, as the tools choose it.
_cct_db() {
  local i db=${CCT_DB:-cct.db}
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      -d | --db) db=${words[i + 1]} ;;
      --db=*) db=${words[i]#--db=} ;;
      -d?*) db=${words[i]#-d} ;;
    esac
  done
  [[ $db == "~/"* ]] && db=$HOME/${db#"~/"}
  printf '%s' "$db"
}

# Run selectors of the database: ids, names, latest, latest~1, the tags
# as tag:KEY=VALUE and the parallel jobs as job:ID (and latest-job).
_cct_selectors() {
  local db
  db=$(_cct_db)
  [[ -r $db ]] || return 0
  echo latest
  echo "latest~1"
  CCT_NO_MALLOC_TUNING=1 cct-query -d "$db" runs --format csv 2>/dev/null | awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    {
      print $col["id"]
      name = $col["name"]; gsub(/^"|"$/, "", name); if (name != "") names[name] = 1
      tags = $col["tags"]; gsub(/^"|"$/, "", tags)
      n = split(tags, kv, / /)
      for (j = 1; j <= n; j++) if (kv[j] ~ /=/) tagset["tag:" kv[j]] = 1
      job = ("job" in col) ? $col["job"] : ""; gsub(/^"|"$/, "", job); if (job != "") jobs["job:" job] = 1
    }
    END { for (n in names) print n; for (t in tagset) print t; for (j in jobs) { print j; any = 1 } if (any) print "latest-job" }'
}

# Whether the word at index I is the value of the option before it.
_cct_is_value() {
  local i=$1
  ((i > 1)) && [[ ${words[i-1]} == -* && ${words[i-1]} != *=* ]] && _cct_takes_value "$tool" "${words[i-1]}"
}

# The index of the first word before the cursor that is neither an option
# nor an option's value (after "--", the word that follows it, maybe the
# cursor's); 0 when there is none.
_cct_first_positional() {
  local i
  for ((i = 1; i < cword; i++)); do
    if [[ ${words[i]} == -- ]]; then echo $((i + 1)); return; fi
    [[ ${words[i]} == -* ]] && continue
    _cct_is_value "$i" && continue
    echo "$i"
    return
  done
  echo 0
}

_cct_complete() {
  local tool=$1 _cct_help_var=
  _cct_load_help "$tool" || return 0
  # Words split at white space only: bash's own COMP_WORDS also splits at
  # ':' and '=', which would cut tag:KEY=VALUE and --db=FILE apart.
  local line=${COMP_LINE:0:COMP_POINT}
  local -a words
  read -ra words <<<"$line"
  [[ -z $line || $line == *[[:space:]] ]] && words+=("")
  local cword=$((${#words[@]} - 1)) cur=${words[${#words[@]} - 1]} prev=
  ((cword > 0)) && prev=${words[cword - 1]}
  local i candidates= mode=words
  if [[ $tool == cct-record ]]; then
    # The profiled program, then its arguments (files).
    local program_at
    program_at=$(_cct_first_positional)
    if ((program_at > 0)); then
      if ((program_at == cword)); then mode=commands; else mode=files; fi
    fi
  fi
  if [[ $mode == words ]]; then
    if [[ $cur == --*=* ]]; then
      prev=${cur%%=*}
      cur=${cur#*=}
    elif [[ $prev != -* ]] || ! _cct_takes_value "$tool" "$prev" || [[ $prev == *=* ]]; then
      prev=
    fi
    if [[ -n $prev ]]; then
      case $prev in
        -d | --db | -o | --output | --flame | --gpu-raw) mode=files ;;
        --symbol-cache) mode=dirs ;;
        --run) candidates=$(_cct_selectors) ;;
        *) candidates=$(_cct_values "$tool" "$prev") ;;
      esac
    elif [[ $cur == -* ]]; then
      candidates=$(_cct_options "$tool")
    else
      case $tool in
        cct-query)
          # The command, then run selectors.
          local command= at
          at=$(_cct_first_positional)
          ((at > 0 && at < cword)) && command=${words[at]}
          if [[ -z $command ]]; then
            candidates=$(_cct_help "$tool" | sed -nE '/^Commands:/,/^$/s/^  ([a-z][a-z-]*) .*/\1/p')
          elif [[ $command == check ]]; then
            mode=files
          else
            candidates=$(_cct_selectors)
          fi ;;
        cct-diff | cct-aggregate) candidates=$(_cct_selectors) ;;
        *) mode=files ;;
      esac
    fi
  fi
  case $mode in
    commands) mapfile -t COMPREPLY < <(compgen -c -- "$cur") ;;
    files) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
    dirs) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
    *) mapfile -t COMPREPLY < <(compgen -W "$candidates" -- "$cur") ;;
  esac
  # bash replaces only the part of the word after its last word-break
  # character (':' or '='): the replies lose what comes before it.
  local breaks=${COMP_WORDBREAKS//[^:=]/}
  if [[ -n $breaks && $cur == *["$breaks"]* ]]; then
    local keep=${cur%"${cur##*["$breaks"]}"}
    for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=${COMPREPLY[i]#"$keep"}; done
  fi
  return 0
}

_cct_record() { _cct_complete cct-record; }
_cct_query() { _cct_complete cct-query; }
_cct_import() { _cct_complete cct-import; }
_cct_diff() { _cct_complete cct-diff; }
_cct_merge() { _cct_complete cct-merge; }
_cct_aggregate() { _cct_complete cct-aggregate; }
complete -F _cct_record -o filenames cct-record
complete -F _cct_query -o filenames cct-query
complete -F _cct_import -o filenames cct-import
complete -F _cct_diff -o filenames cct-diff
complete -F _cct_merge -o filenames cct-merge
complete -F _cct_aggregate -o filenames cct-aggregate
