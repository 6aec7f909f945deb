#!/bin/sh
# Sizes of src/ (STYLE.md 13): prints every function over 150 lines
# without a "long:" reason in the comment just above it, every function of
# more than 8 parameters and every file over 1,500 lines, as
# "size: FILE:LINE: FUNCTION: N lines (rule: ...)", and exits 1 when there
# is one; run by `make check`.  It reads the project's layout: a function
# definition starts at column 0 (its return type may stand on the line
# above) and its body's braces are alone at column 0.
set -u
cd "$(dirname "$0")/.." || exit 2
awk '
# per file: print file:line name lines params haslong
FNR==1 { sig=""; sigstart=0; inbody=0; cmt=""; lastcmt=""; lastcmtend=-10; prestart=-10; precmt="" }
{
  line=$0
  if (inbody) {
    if (line ~ /^}/) { n = FNR - sigstart + 1; print FILENAME ":" sigstart "\t" name "\t" n "\t" np "\t" haslong; inbody=0 }
    next
  }
  # track comments at column 0 (block comments)
  if (incmt) { cmt = cmt " " line; if (line ~ /\*\//) { incmt=0; lastcmt=cmt; lastcmtend=FNR } ; next }
  if (line ~ /^\/\*/) { cmt=line; if (line ~ /\*\//) { lastcmt=cmt; lastcmtend=FNR } else incmt=1; next }
  if (line ~ /^\/\//) { lastcmt = (lastcmtend==FNR-1 ? lastcmt " " : "") line; lastcmtend=FNR; next }
  if (line ~ /^{/ && sig != "") {
    # function start
    s=sig; gsub(/__attribute__\(\([a-z_]+(\([^)]*\))?\)\)/,"",s); i=index(s,"("); name=substr(s,1,i-1); sub(/.*[ *]/,"",name)
    rest=substr(s,i+1); depth=1; np=0; nonempty=0; buf=""
    for (k=1;k<=length(rest);k++) { c=substr(rest,k,1); if(c=="(")depth++; else if(c==")"){depth--; if(depth==0)break} else if(c==","&&depth==1)np++; buf=buf c }
    gsub(/[ \t]/,"",buf); if (buf!="" && buf!="void") np++
    haslong = (sigcmt ~ /long:/) ? 1 : 0
    inbody=1; sig=""; next
  }
  if (sig != "") { if (line ~ /^[ \t]/ || sig !~ /;[ \t]*$/) { sig = sig " " line; next } else { sig="" } }
  if (line ~ /^[A-Za-z_]/ && line !~ /;[ \t]*$/ && line !~ /^(typedef|(struct|enum|union) [a-z_]+ *{|#)/ && index(line,"(")>0 && sig=="") {
    sig=line; sigstart=FNR; sigcmt = (lastcmtend==FNR-1) ? lastcmt : (prestart==FNR-1 ? precmt : "")
    if (line ~ /^static *$/ ) {}
    next
  }
  if (line ~ /^[A-Za-z_]/ && index(line,"(")==0 && line !~ /;/) { pre=line; precmt=(lastcmtend==FNR-1)?lastcmt:""; prestart=FNR; next }
}
' src/*/*.c src/*/*.h | awk -F'\t' '
$3 > 150 && !$5 { printf "size: %s: %s: %d lines (rule: at most 150, or a \"long:\" reason in its comment)\n", $1, $2, $3; bad = 1 }
$4 > 8 { printf "size: %s: %s: %d parameters (rule: at most 8; bundle them in a struct)\n", $1, $2, $4; bad = 1 }
END { if (NR < 100) { print "size: read " NR " functions of src/; expected hundreds (run from the repository)"; bad = 1 }; exit bad }'
r=$?
for f in src/*/*.c src/*/*.h; do
	n=$(wc -l <"$f")
	[ "$n" -gt 1500 ] && { echo "size: $f: $n lines (rule: at most 1,500 lines per file)"; r=1; }
done
[ $r -eq 0 ] && echo "size: src/ keeps the size rules"
exit $r
