/**
 * What one request was billed (src/domain/charges.ts): the header when an answer carries one,
 * the published price when it does not, and the price as possibly charged when no answer came
 * after the request may have reached the API; and what a charge adds to the daily budgets.
 */
import { describe, expect, it } from 'vitest';
import { billedCreditsOf } from '../../src/api/http.ts';
import { budgetDelta, chargeOf } from '../../src/domain/charges.ts';
import {
  batchCredits,
  crawlCredits,
  extractCredits,
  generateCredits,
  searchCredits,
  translationCredits,
} from '../../src/domain/prices.ts';

describe('billedCreditsOf', () => {
  it('reads a non-negative integer header, and nothing else', () => {
    expect(billedCreditsOf({ 'x-billable-requests': '7' })).toBe(7);
    expect(billedCreditsOf({ 'x-billable-requests': ' 0 ' })).toBe(0);
    expect(billedCreditsOf({ 'x-billable-requests': ['3', '4'] })).toBe(3);
    for (const bad of ['-1', '1.5', 'abc', '', '1e3', '9999999999'])
      expect(billedCreditsOf({ 'x-billable-requests': bad })).toBeUndefined();
    expect(billedCreditsOf({})).toBeUndefined();
  });
});

describe('chargeOf', () => {
  it('takes the header over the estimate', () => {
    expect(chargeOf({ status: 200, billedCredits: 12, expectedCredits: 11 })).toEqual({
      credits: 12,
      basis: 'header',
      estimated: 11,
    });
    expect(chargeOf({ status: 200, billedCredits: 1 })).toEqual({ credits: 1, basis: 'header', estimated: null });
  });

  it('records nothing for a free request that was expected to be free', () => {
    expect(chargeOf({ status: 200, billedCredits: 0 })).toBeNull();
    expect(chargeOf({ status: 200 })).toBeNull();
    expect(chargeOf({ failure: 'timeout' })).toBeNull();
  });

  it('records a refused paid request at 0, beside its estimate', () => {
    expect(chargeOf({ status: 400, billedCredits: 0, expectedCredits: 5 })).toEqual({
      credits: 0,
      basis: 'header',
      estimated: 5,
    });
    expect(chargeOf({ status: 429, expectedCredits: 5 })).toEqual({ credits: 0, basis: 'price', estimated: 5 });
  });

  it('prices a 2xx without the header (a 206 too) at the published price', () => {
    expect(chargeOf({ status: 200, expectedCredits: 3 })).toEqual({ credits: 3, basis: 'price', estimated: 3 });
    expect(chargeOf({ status: 206, expectedCredits: 1 })).toEqual({ credits: 1, basis: 'price', estimated: 1 });
  });

  it('counts an unanswered paid request as possibly charged, unless it never left', () => {
    expect(chargeOf({ failure: 'timeout', expectedCredits: 4 })).toEqual({
      credits: 4,
      basis: 'unanswered',
      estimated: 4,
    });
    expect(chargeOf({ failure: 'truncated', expectedCredits: 4 })?.basis).toBe('unanswered');
    expect(chargeOf({ failure: 'not-sent', expectedCredits: 4 })).toBeNull();
  });
});

describe('budgetDelta', () => {
  it('adds what was billed beyond the estimate of an accepted request, and all of an unestimated one', () => {
    expect(budgetDelta({ credits: 12, basis: 'header', estimated: 11, status: 200 })).toBe(1);
    expect(budgetDelta({ credits: 9, basis: 'header', estimated: 11, status: 200 })).toBe(-2);
    expect(budgetDelta({ credits: 1, basis: 'header', estimated: null, status: 200 })).toBe(1);
    // a refusal wrote no batch row, an unanswered POST counts as pending: neither adds
    expect(budgetDelta({ credits: 0, basis: 'header', estimated: 11, status: 400 })).toBe(0);
    expect(budgetDelta({ credits: 11, basis: 'unanswered', estimated: 11, status: null })).toBe(0);
  });
});

describe('published prices', () => {
  it('prices each operation as UPSTREAM.md publishes it', () => {
    expect(batchCredits(50)).toBe(51);
    expect(generateCredits(61)).toBe(4);
    expect(generateCredits(0)).toBe(2);
    expect(translationCredits(600)).toBe(300);
    expect(translationCredits(601)).toBe(330);
    expect(searchCredits(0)).toBe(1);
    expect(searchCredits(20)).toBe(1);
    expect(searchCredits(21)).toBe(2);
    expect(searchCredits(100)).toBe(5);
    expect(crawlCredits(40)).toBe(41);
    expect(extractCredits(30)).toBe(5);
    expect(extractCredits(600)).toBe(50);
  });
});
