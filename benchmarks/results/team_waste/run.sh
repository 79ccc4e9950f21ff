#!/bin/sh
# usage: run.sh AGENTS BLOCKS TAG [K=200] [MAP=random-32-32-10] [SEED=0]
# On a tree patched by instrument.py (it logs each lease's LNS steps and each verdict to $LNS_LOG): one
# `blockopt run routing --mode async` of 30 s; /tmp/lns-TAG.log and .log.v were then kept here as
# TAG.leases.jsonl and TAG.verdicts.jsonl, and the report's totals as TAG.report.json (summarize.py reads them).
# The k200_* runs used seed 1, the e*_S runs seed S, the room_* runs seed 0.
cd "$(dirname "$0")/../../.."
k=${4:-200}; map=${5:-random-32-32-10}
rm -f /tmp/lns-$3.log /tmp/lns-$3.log.v
date +%s.%N > /tmp/start-$3; LNS_LOG=/tmp/lns-$3.log .venv/bin/python -m blockopt run routing --map $map --scen $map-random-1 --robots $k --blocks $2 --agents $1 --processes $1 --time-limit 30 --seed ${6:-0} --mode async --quiet --report /tmp/rep-$3.json --stall-seconds 30 > /dev/null 2>&1
python3 - $3 <<'PY'
import json,sys
tag=sys.argv[1]
rows=[json.loads(l) for l in open(f'/tmp/lns-{tag}.log')]
d=json.load(open(f'/tmp/rep-{tag}.json'))
it=sum(r['it'] for r in rows); s=sum(r['s'] for r in rows); tb=sum(r['tbl'] for r in rows)
t0=min(r['t'] for r in rows); t1=max(r['t'] for r in rows)
print(tag, 'final', d['objective']['final'], 'leases', len(rows), 'improving', sum(r['gain']>0 for r in rows), 'LNS steps', it, 'search s', round(s,1), 'table s', round(tb,1), 'span', round(t1-t0,1), d['proposals']['rejected_by_reason'])
PY
