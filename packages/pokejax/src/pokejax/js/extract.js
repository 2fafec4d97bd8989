// Dump the Gen 1 data pokejax needs from the installed Showdown as JSON on stdout:
// species of gen1randombattle sets and every Gen 1 move (through Dex.mod('gen1'), so Gen 1
// mechanics' values), the Gen 1 type chart, the random-battle set table itself, and what
// Showdown's team validator accepts (see `validation` below).
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

// What Showdown's validator for VALIDATION_FORMAT accepts, so that pokejax.legality can judge a
// team offline as the driver's `validate` does live. [Gen 1] Ubers has gen1randombattle's own
// ruleset (Standard) and no tier bans. Levels are judged at 100 (random battles give Mewtwo
// level 60 with moves learnt at 70 and 81), so legality is per move, plus Showdown's complex
// bans (two moves that no single game can give one Pokémon). legalMoves holds every move the
// validator accepts alone on the species; refusals the validator's words where a refusal is not
// "can't learn" (a clause, Standard's bans, Gen 2 transfer-only, Japan-only events).
const VALIDATION_FORMAT = 'gen1ubers';
const validator = ps.TeamValidator.get(VALIDATION_FORMAT);
const ALL_STATS = ['hp', 'atk', 'def', 'spa', 'spd', 'spe'];
const judgedSet = (name, move) => ({
  species: name, name, moves: [move], level: 100, item: '', ability: 'No Ability',
  evs: Object.fromEntries(ALL_STATS.map(s => [s, 255])),
  ivs: Object.fromEntries(ALL_STATS.map(s => [s, 30])),
});
const gen1Species = {};
for (const s of dex.species.all()) {
  if (s.exists && !s.isNonstandard && s.num >= 1 && s.num <= 151 && !s.forme) gen1Species[s.id] = s.name;
}
const legalMoves = {}, refusals = {};
for (const sid of Object.keys(species)) {
  legalMoves[sid] = [];
  for (const mid of Object.keys(moves)) {
    const problems = validator.validateSet(judgedSet(species[sid].name, mid), {});
    if (!problems) {
      legalMoves[sid].push(mid);
    } else if (problems.join(' ') !== `${species[sid].name} can't learn ${moves[mid].name}.`) {
      (refusals[sid] = refusals[sid] || {})[mid] = problems.join(' ');
    }
  }
}
const complexBans = validator.ruleTable.complexBans
  .filter(([, source, limit]) => source === 'Obtainable Moves' && !limit)
  .map(([rule]) => rule.split(' + ').map(ps.Dex.toID))
  .filter(([sid]) => species[sid]);
const validation = {format: VALIDATION_FORMAT, gen1Species, legalMoves, refusals, complexBans};

const out = {
  showdown: require(path.join(root, 'package.json')).version,
  format: 'gen1randombattle',
  species, moves, typechart, randomSets: sets, validation,
};
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
