// Headless Pokémon Showdown driver for pokejax: one JSON request per stdin line, one JSON
// response per stdout line ({id, ok, result} or {id, ok: false, error}).
// Usage: node driver.js <path to node_modules/pokemon-showdown>
'use strict';
const path = require('path');
const readline = require('readline');

const ps = require(path.resolve(process.argv[2]));
const battles = new Map();
let nextBattle = 1;
let benchPool = null;  // bench_start / bench_step

const toID = text => String(text || '').toLowerCase().replace(/[^a-z0-9]+/g, '');

function toSeed(seed) {
  if (!Array.isArray(seed) || seed.length !== 4) throw new Error(`seed must be 4 uint16, got ${JSON.stringify(seed)}`);
  return seed.map(Number);
}

// An effect's state without its object references (source Pokémon, effect objects): every
// number, string and boolean it carries, which is the hidden state the JAX port must match.
function plainState(state) {
  const out = {};
  for (const [k, v] of Object.entries(state || {})) {
    if (['id', 'effectOrder', 'target'].includes(k)) continue;
    if (v === null || ['number', 'string', 'boolean'].includes(typeof v)) out[k] = v;
    else if (v && typeof v === 'object' && 'id' in v && typeof v.id === 'string') out[k] = `ref:${v.id}`;
  }
  return out;
}

function pokemonState(p) {
  return {
    species: p.species.id, hp: p.hp, maxhp: p.maxhp, status: p.status || '',
    statusState: plainState(p.statusState), statusSourceSelf: p.statusState.source === p,
    boosts: p.boosts, fainted: !!p.fainted, isActive: !!p.isActive, position: p.position,
    moves: p.moveSlots.map(m => ({id: m.id, pp: m.pp, maxpp: m.maxpp, disabled: !!m.disabled})),
    volatiles: Object.fromEntries(Object.entries(p.volatiles).map(([k, v]) => [k, plainState(v)])),
    storedStats: p.storedStats, modifiedStats: p.modifiedStats || null, level: p.level, speed: p.speed,
    types: p.getTypes(), transformed: !!p.transformed,
    lastMove: p.lastMove ? p.lastMove.id : '',
    baseMoves: p.baseMoveSlots.map(m => ({id: m.id, pp: m.pp})), baseStoredStats: p.baseStoredStats,
    ivs: p.set.ivs, evs: p.set.evs, setSpecies: toID(p.set.species),
  };
}

function battleState(b) {
  return {
    turn: b.turn, ended: b.ended, winner: b.winner || '', seed: b.prng.getSeed(),
    lastDamage: b.lastDamage ?? 0,
    sides: b.sides.map(s => ({
      id: s.id, pokemon: s.pokemon.map(pokemonState),
      sideConditions: Object.fromEntries(Object.entries(s.sideConditions).map(([k, v]) => [k, plainState(v)])),
      lastSelectedMoveSlot: s.lastSelectedMoveSlot ?? null, faintedThisTurn: !!s.faintedThisTurn,
      lastSelectedMove: s.lastSelectedMove || '', lastEnemySelectedMove: s.lastEnemySelectedMove || '',
      lastMove: s.lastMove ? s.lastMove.id : '', lastEnemyMove: s.lastEnemyMove ? s.lastEnemyMove.id : '',
      request: s.activeRequest || null,
    })),
  };
}

// The same rule as pokejax/choices.py legal_mask (tests prove it equals Showdown's acceptance).
function legalFromRequest(req, action) {
  if (!req || req.wait) return false;
  const side = req.side.pokemon;
  const forceSwitch = !!(req.forceSwitch && req.forceSwitch.some(x => x));
  const active = (req.active || [null])[0];
  const trapped = !!(active && (active.trapped || active.maybeTrapped));
  if (action < 4) return !forceSwitch && !!active && action < active.moves.length && !active.moves[action].disabled;
  const slot = action - 3;
  if (trapped && !forceSwitch) return false;
  return slot < side.length && !side[slot].active && !side[slot].condition.endsWith(' fnt');
}

// the legal action indices (0-8, as CHOICES) of a side's request
function legalActions(req) {
  return [...Array(9).keys()].filter(a => legalFromRequest(req, a));
}

// -- the greedy heuristic (pokejax.opponents.greedy_policy), transliterated ----------------------
// The numbers come from Python once per process (`greedytable`): per move id [type index,
// physical, base power, accuracy factor, fixed damage], the float32 multiplier matrix
// (attacking type x defending type, plus a last column of 1 for an absent second type) and
// the type names. The accuracy factor is JAX's own float32 value of min(accuracy, 100) / 100
// (accuracy = pokejax's ALWAYS_HITS = -1 for always-hit moves, so -0.01): XLA compiles the
// division by the constant 100 as a multiplication by float32(0.01), so e.g. 85 gives
// 0.84999996, not float32(0.85). Every other float32 operation of opponents.expected_damage is
// reproduced with Math.fround in the same order, quirks included: types are indices with -1
// for an absent (or unknown) type, a -1 index reads the last column, a move of unknown type
// (-1, Bide) reads row 0 and gets STAB from an absent second type.
let greedyTable = null;
const f32 = Math.fround;

function typeIndices(types) {
  const out = types.map(t => greedyTable.typeIndex.has(t) ? greedyTable.typeIndex.get(t) : -1);
  while (out.length < 2) out.push(-1);
  return out.slice(0, 2);
}

const column = (row, i) => row[i < 0 ? row.length + i : i];

// float32 scores of the active's 4 move slots against the foe's active (0 for an empty slot)
function greedyScores(side) {
  if (!greedyTable) throw new Error('greedytable not loaded');
  const me = side.active[0], foe = side.foe.active[0];
  const mine = typeIndices(me.getTypes()), theirs = typeIndices(foe.getTypes());
  const scores = [];
  for (let i = 0; i < 4; i++) {
    const slot = me.moveSlots[i];
    if (!slot) { scores.push(0); continue; }
    const row = greedyTable.moves.get(slot.id);
    if (!row) throw new Error(`greedytable has no move ${slot.id}`);
    const [mtype, physical, basePower, acc, fixed] = row;
    const mult = greedyTable.mult[Math.max(mtype, 0)];
    const eff = f32(column(mult, theirs[0]) * column(mult, theirs[1]));
    const stab = mine.includes(mtype) ? 1.5 : 1.0;
    const atk = f32(physical ? me.modifiedStats.atk : me.modifiedStats.spa);
    const dfn = f32(physical ? foe.modifiedStats.def : foe.modifiedStats.spd);
    if (fixed !== -1) {
      const value = f32(fixed === -2 ? me.level : fixed);
      scores.push(f32(value * acc) * (eff > 0 ? 1 : 0));
    } else {
      scores.push(f32(f32(f32(f32(f32(basePower * stab) * eff) * atk) / Math.max(dfn, 1)) * acc));
    }
  }
  return scores;
}

// {action, scores, switches}: action = the first highest-scoring legal move slot (0-3); null
// when no move is legal (switches lists the legal switch actions, 4-8, to draw from); -1 when
// the side has nothing to choose
function greedyDecision(side) {
  const req = side.activeRequest;
  const legal = legalActions(req);
  const moves = legal.filter(a => a < 4);
  if (!legal.length) return {action: -1, scores: null, switches: []};
  if (!moves.length) return {action: null, scores: null, switches: legal};
  const scores = greedyScores(side);
  let best = moves[0];
  for (const a of moves) if (scores[a] > scores[best]) best = a;
  return {action: best, scores, switches: legal.filter(a => a >= 4)};
}

const CHOICES = ['move 1', 'move 2', 'move 3', 'move 4', 'switch 2', 'switch 3', 'switch 4', 'switch 5', 'switch 6'];

// Wrap the battle's PRNG so that each draw records its arguments, result and the first
// stack frames outside prng.js: which Showdown function asked for it, and why.
function traceDraws(b) {
  b.drawLog = [];
  const prng = b.prng;
  const random = prng.random.bind(prng);
  prng.random = (from, to) => {
    const result = random(from, to);
    const frames = (new Error().stack || '').split('\n').slice(2)
      .filter(l => !l.includes('prng.js')).slice(0, 4)
      .map(l => l.trim().replace(/^at /, '').replace(/\(.*node_modules\/pokemon-showdown\//, '(').replace(/:\d+\)$/, ')'));
    b.drawLog.push({from: from ?? null, to: to ?? null, result, sites: frames});
    return result;
  };
}

function takeDraws(b) {
  if (!b.drawLog) return undefined;
  const out = b.drawLog;
  b.drawLog = [];
  return out;
}

function getBattle(id) {
  const b = battles.get(id);
  if (!b) throw new Error(`no battle ${id}`);
  return b;
}

// Team validation, as pokejax/legality.py does offline: Showdown's validator for [Gen 1] Ubers
// (gen1randombattle's Standard ruleset, no tier bans) on a copy of each set judged at level 100,
// with missing EVs / IVs filled as the battle fills them (0 / 31), plus the refusals of what
// Showdown would otherwise read as something else: an alias ("Pikachuu" for Pikachu), a level
// outside 1..100 or not an integer, SpA and SpD IVs that differ (Showdown copies SpA over SpD).
const VALIDATION_FORMAT = 'gen1ubers';
const STAT_IDS = ['hp', 'atk', 'def', 'spa', 'spd', 'spe'];
let validator = null;
class TeamRefused extends Error {
  constructor(side, problems) {
    super(`Showdown's validator refuses the ${side} team: ${problems.join(' ')}`);
    this.problems = problems;
  }
}
function teamProblems(team) {
  validator = validator || ps.TeamValidator.get(VALIDATION_FORMAT);
  const dex = validator.dex;
  const sets = typeof team === 'string' ? ps.Teams.unpack(team) : team;
  if (!Array.isArray(sets)) return ['a team is a packed string or a list of sets'];
  const problems = [];
  const judged = sets.map((set, i) => {
    const where = `set ${i + 1}`;
    const species = dex.species.get(set.species);
    if (!species.exists || species.id !== toID(set.species)) {
      problems.push(`${where}: ${JSON.stringify(set.species)} is not a Gen 1 species` +
                    (species.exists ? ` (Showdown would read it as ${species.name})` : ''));
    }
    if (!Array.isArray(set.moves)) problems.push(`${where}: moves must be a list of names`);
    for (const m of Array.isArray(set.moves) ? set.moves : []) {
      if (typeof m !== 'string' || !m) {
        problems.push(`${where}: a move must be a name, got ${JSON.stringify(m)}`);
        continue;
      }
      const move = dex.moves.get(m);
      if (move.exists && move.id !== toID(m)) {
        problems.push(`${where}: ${JSON.stringify(m)} is not a Gen 1 move (Showdown would read it as ${move.name})`);
      }
    }
    const level = set.level ?? 100;
    if (!Number.isInteger(level) || level < 1 || level > 100) {
      problems.push(`${where}: level must be an integer in 1..100, got ${JSON.stringify(set.level)}`);
    }
    const ivs = Object.fromEntries(STAT_IDS.map(s => [s, set.ivs?.[s] ?? 31]));
    if (ivs.spa !== ivs.spd) {
      problems.push(`${where}: SpA IV ${ivs.spa} and SpD IV ${ivs.spd} differ; Gen 1 has one Special`);
    }
    const evs = Object.fromEntries(STAT_IDS.map(s => [s, set.evs?.[s] ?? 0]));
    return {...set, moves: Array.isArray(set.moves) ? [...set.moves] : [], level: 100, evs, ivs};
  });
  return problems.concat(validator.validateTeam(judged) || []);
}

const commands = {
  version() {
    return require(path.join(path.resolve(process.argv[2]), 'package.json')).version;
  },
  // raw draws: calls = [[from, to], ...] where null means "argument absent"
  prng({seed, calls}) {
    const prng = new ps.PRNG(toSeed(seed).join(','));
    const out = calls.map(([from, to]) => (from === null ? prng.random() : to === null ? prng.random(from) : prng.random(from, to)));
    return {values: out, seed: prng.getSeed()};
  },
  shuffle({seed, n}) {
    const prng = new ps.PRNG(toSeed(seed).join(','));
    const items = [...Array(n).keys()];
    prng.shuffle(items);
    return {items, seed: prng.getSeed()};
  },
  // the problems Showdown's validator finds in a team (packed or sets), [] when legal
  validate({team}) {
    return teamProblems(team);
  },
  team({format, seed}) {
    const gen = ps.Teams.getGenerator(format, toSeed(seed));
    const team = gen.getTeam();
    return {sets: team, packed: ps.Teams.pack(team)};
  },
  // trace: record every PRNG draw with the call sites that made it (see drawTrace)
  // pp (optional): {p1: [pp of each move slot of the first Pokémon], p2: [...]} set after the
  // battle starts (tests reach 0 PP and Struggle without playing dozens of turns)
  // unvalidated: skip the team validator (mechanics tests give a species any move the engine
  // has, which a battle plays and the validator refuses); every other caller is validated
  start({format, seed, p1team, p2team, trace, pp, unvalidated}) {
    if (!unvalidated) {
      for (const [side, team] of [['p1', p1team], ['p2', p2team]]) {
        const problems = teamProblems(team);
        if (problems.length) throw new TeamRefused(side, problems);
      }
    }
    const b = new ps.Battle({formatid: format, seed: toSeed(seed)});
    if (trace) traceDraws(b);
    b.setPlayer('p1', {name: 'p1', team: p1team});
    b.setPlayer('p2', {name: 'p2', team: p2team});
    for (const [side, pps] of Object.entries(pp || {})) {
      const mon = b[side].pokemon[0];
      pps.forEach((v, i) => { if (mon.baseMoveSlots[i]) mon.baseMoveSlots[i].pp = v; });
    }
    if (pp) b.makeRequest();
    const id = nextBattle++;
    battles.set(id, b);
    return {battle: id, state: battleState(b), draws: takeDraws(b)};
  },
  choose({battle, p1, p2}) {
    const b = getBattle(battle);
    for (const [side, choice] of [['p1', p1], ['p2', p2]]) {
      if (choice === null || choice === undefined) continue;
      if (!b.choose(side, choice)) {
        const err = b[side].choice.error || 'invalid choice';
        b[side].clearChoice();
        return {accepted: false, side, error: err, state: battleState(b)};
      }
    }
    return {accepted: true, state: battleState(b), draws: takeDraws(b)};
  },
  // which of the given choice strings Showdown would accept now, per side (nothing committed)
  accepts({battle, choices}) {
    const b = getBattle(battle);
    const out = {};
    for (const side of b.sides) {
      out[side.id] = choices.map(choice => {
        const ok = side.choose(choice);
        side.clearChoice();
        return !!ok;
      });
    }
    return out;
  },
  // the greedy heuristic's numbers (see greedyScores): types [name], mult [[float32]],
  // moves {id: [type, physical, basePower, accuracy factor (float32), fixedDamage]}
  greedytable({types, mult, moves}) {
    greedyTable = {
      typeIndex: new Map(types.map((t, i) => [t, i])),
      mult: mult.map(row => row.map(f32)),
      moves: new Map(Object.entries(moves).map(([id, [t, p, bp, acc, fixed]]) => [id, [t, p, bp, f32(acc), fixed]])),
    };
    return {types: types.length, moves: greedyTable.moves.size};
  },
  // the greedy heuristic's decision for side ('p1'/'p2') of a live battle (nothing committed)
  greedy({battle, side}) {
    return greedyDecision(getBattle(battle)[side]);
  },
  // greedy vs uniformly random for `battles` battles, inside Node. Teams from Showdown's
  // generator seeded with 4 words drawn from a chooser PRNG seeded `seed`; that chooser then
  // draws every battle seed (4 words, before the battle's teams) and every random choice (the
  // random player's legal action, greedy's switch when no move is legal). Greedy plays p1 when
  // (first + i) is even, p2 otherwise. Per battle: greedy's score (win 1, tie
  // 0.5, loss 0; null for a battle that did not end), whether it ended, Showdown's turn count.
  match({format, seed, battles, maxDecisions, first}) {
    const chooser = new ps.PRNG(toSeed(seed).join(','));
    const gen = ps.Teams.getGenerator(format, [0, 0, 0, 0].map(() => chooser.random(65536)));
    const limit = maxDecisions ?? 3003;
    const scores = [], turns = [], ended = [];
    let decisions = 0;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < battles; i++) {
      const greedySide = ((first || 0) + i) % 2 === 0 ? 'p1' : 'p2';
      const b = new ps.Battle({formatid: format, seed: [0, 0, 0, 0].map(() => chooser.random(65536))});
      b.setPlayer('p1', {name: 'p1', team: gen.getTeam()});
      b.setPlayer('p2', {name: 'p2', team: gen.getTeam()});
      // played until it ends by the rules (at the latest Showdown's turn limit ties it); the
      // decision bound only keeps a broken battle from running forever: it reports ended false
      for (let d = 0; !b.ended && d < limit; d++) {
        for (const side of b.sides) {
          if (b.ended || !side.activeRequest || side.activeRequest.wait) continue;
          let action;
          if (side.id === greedySide) {
            const g = greedyDecision(side);
            action = g.action === null ? g.switches[chooser.random(g.switches.length)] : g.action;
          } else {
            const legal = legalActions(side.activeRequest);
            action = legal[chooser.random(legal.length)];
          }
          if (!b.choose(side.id, CHOICES[action])) throw new Error(`rejected ${CHOICES[action]} for ${side.id}`);
          decisions++;
        }
      }
      scores.push(!b.ended ? null : !b.winner ? 0.5 : b.winner === greedySide ? 1 : 0);
      turns.push(b.turn);
      ended.push(!!b.ended);
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    return {scores, turns, ended, decisions, seconds};
  },
  // Random self-play inside Node (no round trip per turn): the reference's own speed for
  // the benchmark. Choices are uniform over what Showdown accepts, drawn from a separate PRNG.
  selfplay({format, seed, battles}) {
    const chooser = new ps.PRNG(toSeed(seed).join(','));
    const gen = ps.Teams.getGenerator(format, toSeed(seed));
    let turns = 0, choicesMade = 0;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < battles; i++) {
      const b = new ps.Battle({formatid: format, seed: [chooser.random(65536), chooser.random(65536), chooser.random(65536), chooser.random(65536)]});
      b.setPlayer('p1', {team: gen.getTeam()});
      b.setPlayer('p2', {team: gen.getTeam()});
      while (!b.ended && b.turn < 1000) {
        for (const side of b.sides) {
          if (!side.activeRequest || side.activeRequest.wait) continue;
          const legal = legalActions(side.activeRequest);
          b.choose(side.id, CHOICES[legal[chooser.random(legal.length)]]);
          choicesMade++;
        }
      }
      turns += b.turn;
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    return {battles, turns, choices: choicesMade, seconds};
  },
  // The benchmark's reference: `live` battles kept in this process (benchStart), then
  // benchStep plays ks.length / 2 decision points round-robin over them with no state
  // export: each side with a request plays the (k mod n)-th of its n legal actions (k from
  // `ks`, two per decision); an ended battle is replaced at once by a new one (the next
  // teams of the pool, battle seed from a PRNG seeded by `seed`).
  // Like the candidate, a new battle takes its teams from a pool generated up front
  // (`teamPool` pairs, untimed), so the timing holds battle play and battle creation only.
  bench_start({format, seed, live, teamPool}) {
    const chooser = new ps.PRNG(toSeed(seed).join(','));
    const gen = ps.Teams.getGenerator(format, toSeed(seed));
    const teams = Array.from({length: 2 * teamPool}, () => ps.Teams.pack(gen.getTeam()));
    let nextTeams = 0;
    const fresh = () => {
      const b = new ps.Battle({formatid: format, seed: [0, 0, 0, 0].map(() => chooser.random(65536))});
      b.setPlayer('p1', {team: teams[2 * nextTeams]});
      b.setPlayer('p2', {team: teams[2 * nextTeams + 1]});
      nextTeams = (nextTeams + 1) % teamPool;
      return b;
    };
    benchPool = {fresh, battles: Array.from({length: live}, fresh), next: 0, started: live};
    return {live};
  },
  bench_step({ks}) {
    const pool = benchPool;
    if (!pool) throw new Error('bench_step before bench_start');
    const n = ks.length / 2;
    for (let j = 0; j < n; j++) {
      const i = pool.next;
      pool.next = (i + 1) % pool.battles.length;
      const b = pool.battles[i];
      b.sides.forEach((side, s) => {
        if (!side.activeRequest || side.activeRequest.wait) return;
        const legal = legalActions(side.activeRequest);
        const choice = CHOICES[legal[ks[2 * j + s] % legal.length]];
        if (!b.choose(side.id, choice)) throw new Error(`Showdown rejected ${choice}: ${side.choice.error}`);
      });
      if (b.ended) {
        pool.battles[i] = pool.fresh();
        pool.started++;
      }
    }
    return {decisions: n, started: pool.started};
  },
  // One call of Gen 1's getDamage on a fresh 1-vs-1 battle, from a given PRNG seed.
  // atk/def override the attacker's/defender's modified stats (what getStat reads); volatiles
  // are added before the call (focusenergy on p1, reflect/lightscreen on p2).
  damage({attacker, defender, move, seed, atk, def, volatiles}) {
    // gen1randombattle, not a Custom Game: Custom Game formats replace battle.trunc with
    // Math.trunc, which removes Gen 1's 8-bit rollovers
    const b = new ps.Battle({formatid: 'gen1randombattle', seed: toSeed(seed)});
    b.setPlayer('p1', {name: 'p1', team: [attacker]});
    b.setPlayer('p2', {name: 'p2', team: [defender]});
    const src = b.p1.active[0], tgt = b.p2.active[0];
    Object.assign(src.modifiedStats, atk || {});
    Object.assign(tgt.modifiedStats, def || {});
    for (const v of (volatiles && volatiles.p1) || []) src.addVolatile(v);
    for (const v of (volatiles && volatiles.p2) || []) tgt.addVolatile(v);
    b.prng = new ps.PRNG(toSeed(seed).join(','));
    const m = b.dex.getActiveMove(move);
    const standard = !(m.damageCallback || m.damage || m.ohko || m.basePowerCallback ||
      (m.self && m.self.volatileStatus === 'partialtrappinglock') || m.category === 'Status');
    const damage = b.actions.getDamage(src, tgt, m, true);
    return {
      damage: damage === false ? null : damage, immune: damage === false, standard,
      crit: !!tgt.getMoveHitData(m).crit, seed: b.prng.getSeed(),
      attacker: {level: src.level, modified: src.modifiedStats, base: src.baseStoredStats,
        types: src.getTypes(), baseSpe: b.dex.species.get(src.set.species).baseStats.spe},
      defender: {modified: tgt.modifiedStats, base: tgt.baseStoredStats, types: tgt.getTypes(),
        volatiles: Object.keys(tgt.volatiles)},
      move: {type: m.type, category: m.category, basePower: m.basePower, critRatio: m.critRatio,
        willCrit: !!m.willCrit, selfdestruct: !!m.selfdestruct},
    };
  },
  // Gen 1 tryMoveHit for one move on a fresh 1-vs-1 battle: did the accuracy check pass?
  // boosts: {p1: {...}, p2: {...}} set before the call.
  tryhit({attacker, defender, move, seed, boosts, volatiles}) {
    const b = new ps.Battle({formatid: 'gen1randombattle', seed: toSeed(seed)});
    b.setPlayer('p1', {name: 'p1', team: [attacker]});
    b.setPlayer('p2', {name: 'p2', team: [defender]});
    const src = b.p1.active[0], tgt = b.p2.active[0];
    Object.assign(src.boosts, (boosts && boosts.p1) || {});
    Object.assign(tgt.boosts, (boosts && boosts.p2) || {});
    for (const v of (volatiles && volatiles.p2) || []) tgt.addVolatile(v);
    b.prng = new ps.PRNG(toSeed(seed).join(','));
    const m = b.dex.getActiveMove(move);
    const n0 = b.log.length;
    b.actions.tryMoveHit(tgt, src, m);
    const log = b.log.slice(n0);
    return {missed: log.some(l => l.startsWith('|-miss|')), immune: log.some(l => l.startsWith('|-immune|')),
      accuracy: m.accuracy, target: m.target, log};
  },
  // Battle.speedSort on plain items {id, order, priority, speed, subOrder, effectOrder}
  speedsort({seed, items}) {
    const b = new ps.Battle({formatid: 'gen1randombattle', seed: toSeed(seed)});
    b.prng = new ps.PRNG(toSeed(seed).join(','));
    const list = items.map(x => ({...x}));
    b.speedSort(list);
    return {ids: list.map(x => x.id), seed: b.prng.getSeed()};
  },
  // Gen 1 Battle.boost of one stat on a fresh battle's p1 active, from given boosts and
  // modified stats (the 999/1 quirks live in Pokemon.boostBy)
  boost({pokemon, boosts, modified, stat, delta}) {
    const b = new ps.Battle({formatid: 'gen1randombattle', seed: [1, 2, 3, 4]});
    b.setPlayer('p1', {name: 'p1', team: [pokemon]});
    b.setPlayer('p2', {name: 'p2', team: [pokemon]});
    const mon = b.p1.active[0];
    Object.assign(mon.boosts, boosts || {});
    Object.assign(mon.modifiedStats, modified || {});
    const success = b.boost({[stat]: delta}, mon, null, null);
    return {boosts: mon.boosts, modified: mon.modifiedStats, stored: mon.storedStats, success};
  },
  // Gen 1 BeforeMove event for p1's active (status + volatiles given), from a seed; reports
  // whether it may move, what changed, and every draw
  beforemove({attacker, defender, move, seed, status, statusTime, volatiles, modified}) {
    const b = new ps.Battle({formatid: 'gen1randombattle', seed: toSeed(seed)});
    b.setPlayer('p1', {name: 'p1', team: [attacker]});
    b.setPlayer('p2', {name: 'p2', team: [defender]});
    const src = b.p1.active[0], tgt = b.p2.active[0];
    Object.assign(src.modifiedStats, modified || {});
    if (status) {
      src.setStatus(status);
      if (statusTime !== undefined && statusTime !== null) src.statusState.time = statusTime;
    }
    for (const [name, fields] of Object.entries(volatiles || {})) {
      src.addVolatile(name, tgt);
      if (src.volatiles[name]) Object.assign(src.volatiles[name], fields);
    }
    b.prng = new ps.PRNG(toSeed(seed).join(','));
    traceDraws(b);
    const hp0 = src.hp;
    const m = b.dex.getActiveMove(move);
    const result = b.runEvent('BeforeMove', src, tgt, m);
    return {
      canMove: !!result, hpBefore: hp0, hpLost: hp0 - src.hp, status: src.status,
      statusTime: src.statusState.time ?? null,
      volatiles: Object.fromEntries(Object.entries(src.volatiles).map(([k, v]) => [k, plainState(v)])),
      draws: takeDraws(b), seed: b.prng.getSeed(),
    };
  },
  // Gen 1 moveHit (no accuracy check) of a move on a fresh 1-vs-1 battle: damage and
  // secondary effects, draws traced. target: {status, boosts, modified} set before the call.
  movehit({attacker, defender, move, seed, target}) {
    const b = new ps.Battle({formatid: 'gen1randombattle', seed: toSeed(seed)});
    b.setPlayer('p1', {name: 'p1', team: [attacker]});
    b.setPlayer('p2', {name: 'p2', team: [defender]});
    const src = b.p1.active[0], tgt = b.p2.active[0];
    if (target && target.status) tgt.setStatus(target.status);
    Object.assign(tgt.boosts, (target && target.boosts) || {});
    Object.assign(tgt.modifiedStats, (target && target.modified) || {});
    if (target && target.hp) tgt.hp = target.hp;
    b.prng = new ps.PRNG(toSeed(seed).join(','));
    traceDraws(b);
    const m = b.dex.getActiveMove(move);
    const before = {hp: tgt.hp, status: tgt.status, boosts: {...tgt.boosts}, modified: {...tgt.modifiedStats}};
    const damage = b.actions.moveHit(tgt, src, m);
    return {
      damage, before, hp: tgt.hp, status: tgt.status, statusTime: tgt.statusState.time ?? null,
      boosts: tgt.boosts, modified: tgt.modifiedStats, stored: tgt.storedStats, types: tgt.getTypes(),
      volatiles: Object.fromEntries(Object.entries(tgt.volatiles).map(([k, v]) => [k, plainState(v)])),
      attacker: {level: src.level, modified: src.modifiedStats, base: src.baseStoredStats,
        types: src.getTypes(), baseSpe: b.dex.species.get(src.set.species).baseStats.spe},
      move: {type: m.type, category: m.category, basePower: m.basePower, critRatio: m.critRatio,
        willCrit: !!m.willCrit, selfdestruct: !!m.selfdestruct},
      defenderBase: tgt.baseStoredStats,
      draws: takeDraws(b), seed: b.prng.getSeed(),
    };
  },
  state({battle}) {
    return battleState(getBattle(battle));
  },
  // Put a live battle where random play rarely goes (tests of how a battle ends): set the
  // turn counter, and per Pokémon {side, slot, hp, status, moves: [[id, pp], ...], types}.
  // hp 0 faints it as Showdown's faint bookkeeping would (fainted, status 'fnt', one Pokémon
  // less left); moves replace its move slots (and base move slots, the same objects, as a new
  // Pokémon has them). The requests are
  // made again for the edited battle, so the players choose from what it now allows.
  edit({battle, turn, pokemon}) {
    const b = getBattle(battle);
    if (turn !== undefined) b.turn = turn;
    for (const e of pokemon || []) {
      const side = b[e.side];
      const p = side.pokemon[e.slot];
      if (!p) throw new Error(`no Pokémon ${e.side} slot ${e.slot}`);
      if (e.moves) {
        const slots = e.moves.map(([id, pp]) => {
          const move = b.dex.moves.get(id);
          if (!move.exists) throw new Error(`unknown move ${id}`);
          return {move: move.name, id: move.id, pp, maxpp: Math.max(pp, 1), target: move.target,
                  disabled: false, disabledSource: '', used: false};
        });
        // as Pokemon's constructor has them: two arrays of the same slot objects (a move
        // used pays its PP in both)
        p.baseMoveSlots = slots;
        p.moveSlots = slots.slice();
        // a side's last selected slot is one of its active's slots (a frozen or asleep
        // active's "Fight" replays it): as after a switch-in, slot 0 when it no longer exists
        if (p.isActive && (side.lastSelectedMoveSlot ?? 0) >= slots.length) {
          side.lastSelectedMoveSlot = 0;
        }
      }
      if (e.types) { p.types = e.types; p.baseTypes = e.types; }
      if (e.status !== undefined) {
        p.status = e.status;
        p.statusState = b.initEffectState({id: e.status, target: p});
      }
      if (e.hp !== undefined) {
        p.hp = e.hp;
        if (e.hp === 0 && !p.fainted) {
          p.fainted = true;
          p.status = 'fnt';
          p.statusState = b.initEffectState({id: 'fnt', target: p});
          side.pokemonLeft--;
        }
      }
    }
    b.makeRequest();
    return battleState(b);
  },
  close({battle}) {
    battles.delete(battle);
    return true;
  },
  // Showdown's own serialisation (sim/state.ts, Battle.toJSON): the whole battle — queue,
  // PRNG, every Pokémon, volatiles, effect states, log — as a JSON string
  serialize({battle}) {
    return JSON.stringify(getBattle(battle).toJSON());
  },
  // a new battle restored from serialize()'s JSON (Battle.fromJSON): the reference side of L2
  // really loads a recorded state instead of replaying the battle up to it
  restore({json}) {
    const b = ps.Battle.fromJSON(json);
    const id = nextBattle++;
    battles.set(id, b);
    return {battle: id, state: battleState(b)};
  },
  // several battles per round trip: choose for each item {battle, p1, p2} (as `choose`), or
  // restore each JSON (as `restore`), or close each battle
  choose_many({items}) {
    return items.map(item => commands.choose(item));
  },
  restore_many({jsons}) {
    return jsons.map(json => commands.restore({json}));
  },
  close_many({battles: ids}) {
    for (const id of ids) battles.delete(id);
    return true;
  },
};

const rl = readline.createInterface({input: process.stdin, terminal: false});
rl.on('line', line => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    process.stdout.write(JSON.stringify({id: null, ok: false, error: `bad JSON: ${e.message}`}) + '\n');
    return;
  }
  try {
    const fn = commands[req.cmd];
    if (!fn) throw new Error(`unknown command ${req.cmd}`);
    process.stdout.write(JSON.stringify({id: req.id, ok: true, result: fn(req.args || {})}) + '\n');
  } catch (e) {
    const reply = e instanceof TeamRefused
      ? {id: req.id, ok: false, error: e.message, problems: e.problems}
      : {id: req.id, ok: false, error: String(e && e.stack || e)};
    process.stdout.write(JSON.stringify(reply) + '\n');
  }
});
rl.on('close', () => process.exit(0));
