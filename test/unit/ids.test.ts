import { expect } from 'chai';
import { isId, newId } from '../../shared/ids.js';

describe('ids', () => {
  it('are prefixed ULIDs that isId recognises', () => {
    const id = newId('em');
    expect(id).to.match(/^em_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(isId(id, 'em')).to.equal(true);
    expect(isId(id, 'rcp')).to.equal(false);
  });

  it('sort in creation order, also within one millisecond, and never repeat', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('req'));
    expect(new Set(ids).size).to.equal(ids.length);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!, `${ids[i - 1]} < ${ids[i]}`).to.equal(true);
  });

  it('draw their random part from every one of the 32 characters', () => {
    const seen = new Set<string>();
    // A new millisecond re-draws the random part; the first random character is drawn, not incremented.
    for (let i = 0; i < 2000 && seen.size < 32; i++) {
      const start = Date.now();
      while (Date.now() === start) {
        /* wait for the next millisecond */
      }
      seen.add(newId('req').slice(4 + 10, 4 + 11));
    }
    expect(seen.size).to.equal(32);
  });
});
