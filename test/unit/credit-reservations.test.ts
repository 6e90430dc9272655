import { describe, expect, it } from 'vitest';
import { CreditReservations } from '../../src/pipeline/credits.ts';

/** A fake `/me`: credits left, changed by charges; each read can be held open by the test. */
function account(left: number) {
  const state = { left };
  return {
    state,
    /** a read that answers with what is left when `answer()` is called */
    read() {
      let answer!: () => void;
      const p = new Promise<number>((resolve) => (answer = () => resolve(state.left)));
      return { left: () => p, answer };
    },
  };
}

describe('CreditReservations', () => {
  it('lets side-by-side checks pass only while together they fit', async () => {
    const acc = account(1000);
    const reservations = new CreditReservations();
    const r1 = acc.read();
    const r2 = acc.read();
    const c1 = reservations.check(600, r1.left);
    const c2 = reservations.check(600, r2.left);
    r1.answer();
    r2.answer();
    const [a, b] = await Promise.all([c1, c2]);
    expect(a.available).toBe(1000);
    expect(b.available).toBe(400);
    expect(600 <= a.available && 600 > b.available).toBe(true);
  });

  it('counts a reservation released after a read began (its charge may be missing from that read)', async () => {
    const acc = account(1000);
    const reservations = new CreditReservations();
    const r0 = acc.read();
    r0.answer();
    const first = await reservations.check(300, r0.left);
    // the read below begins, the first sync then submits (charge) and releases
    const late = acc.read();
    const pending = reservations.check(800, late.left);
    acc.state.left -= 300;
    first.release();
    late.answer();
    // /me said 700 but may or may not have shown the 300: counted again, refused
    expect((await pending).available).toBe(400);
  });

  it('does not count a reservation released before a read began (its charge is in that read)', async () => {
    const acc = account(1000);
    const reservations = new CreditReservations();
    const r = acc.read();
    r.answer();
    const first = await reservations.check(300, r.left);
    acc.state.left -= 300;
    first.release();
    const next = acc.read();
    next.answer();
    expect((await reservations.check(700, next.left)).available).toBe(700);
  });

  it('reserves nothing for a refused estimate', async () => {
    const acc = account(100);
    const reservations = new CreditReservations();
    const r = acc.read();
    r.answer();
    expect((await reservations.check(500, r.left)).available).toBe(100);
    const again = acc.read();
    again.answer();
    expect((await reservations.check(100, again.left)).available).toBe(100);
  });
});
