// Dump the Gen 1 data pokejax needs from the installed Showdown as JSON on stdout:
// species of gen1randombattle sets and every Gen 1 move (through Dex.mod('gen1'), so Gen 1
// mechanics' values), the Gen 1 type chart, and the random-battle set table itself.
// Usage: node extract.js <path to node_modules/pokemon-showdown>
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(process.argv[2]);
const ps = require(root);
const dex = ps.Dex.mod('gen1');
const sets = JSON.parse(fs.readFileSync(path.join(root, 'dist/data/random-battles/gen1/data.json'), 'utf8'));

const moveIds = new Set();
for (const entry of Object.values(sets)) {
  for (const key of ['moves', 'essentialMoves', 'exclusiveMoves', 'comboMoves']) {
    for (const m of entry[key] || []) moveIds.add(m);
  }
}
// Metronome and Mirror Move can call any Gen 1 move, so the table holds all of them
for (const m of dex.moves.all()) {
  if (m.exists && m.num > 0 && m.num <= 165 && !m.isNonstandard) moveIds.add(m.id);
}

const pick = (obj, keys) => Object.fromEntries(keys.filter(k => obj[k] !== undefined).map(k => [k, obj[k]]));

const species = {};
for (const id of Object.keys(sets).sort()) {
  const s = dex.species.get(id);
  species[id] = {name: s.name, num: s.num, types: s.types, baseStats: s.baseStats};
}

const moves = {};
for (const id of [...moveIds].sort()) {
  const m = dex.moves.get(id);
  if (!m.exists) throw new Error(`unknown move ${id}`);
  moves[id] = pick(m, ['name', 'num', 'type', 'category', 'basePower', 'accuracy', 'pp', 'priority',
    'target', 'critRatio', 'multihit', 'drain', 'recoil', 'heal', 'ohko', 'damage', 'selfdestruct',
    'willCrit', 'boosts', 'status', 'volatileStatus', 'secondary', 'self', 'flags']);
  moves[id].ignoreImmunity = m.ignoreImmunity ?? null;
}

const typechart = {};
for (const t of dex.types.all()) {
  if (!t.exists || t.isNonstandard) continue;
  typechart[t.id] = {name: t.name, damageTaken: t.damageTaken};
}

const out = {
  showdown: require(path.join(root, 'package.json')).version,
  format: 'gen1randombattle',
  species, moves, typechart, randomSets: sets,
};
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
