#!/bin/sh
# usage: one.sh MAP K AGENTS BLOCKS MODE TAG
cd "$(dirname "$0")/../../.."
m=$1; k=$2; a=$3; b=$4; mode=$5; tag=$6
if [ "$mode" = hold ]; then extra="--mode rounds --selection ucb1 --hold"; else extra="--mode $mode"; fi
MPLBACKEND=Agg timeout 200 .venv/bin/python -m blockopt run routing --map $m --scen $m-random-1 --robots $k \
  --blocks $b --agents $a --processes $a --time-limit 30 --seed 0 $extra --quiet --stall-seconds 30 \
  --report /tmp/r-$tag.json > /dev/null 2>&1
python3 -c "
import json;r=json.load(open('/tmp/r-$tag.json'));o=r['objective'];p=r['proposals']
print('$tag', '$m', $k, 'agents $a blocks $b $mode', 'SOC', o['final'], 'SOC/LB %.4f'%(o['final']/o['reference']), 'feasible', r['feasible'], 'received', p['received'], 'accepted', p['accepted'])"
