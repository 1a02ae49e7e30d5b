import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  detectCreditCards,
  hasKnownIssuer,
  passesLuhn,
} from '../../../src/gateway/pipeline/content-filters/detectors/credit-card.js';
import { detectEmails } from '../../../src/gateway/pipeline/content-filters/detectors/email.js';
import { detectIpAddresses } from '../../../src/gateway/pipeline/content-filters/detectors/ip-address.js';
import { detectPhoneNumbers } from '../../../src/gateway/pipeline/content-filters/detectors/phone.js';
import { detectSocialSecurityNumbers } from '../../../src/gateway/pipeline/content-filters/detectors/ssn.js';
import { matched } from './detect-helper.js';

function expectFound(detector: Parameters<typeof matched>[0], cases: Record<string, string[]>) {
  for (const [text, expected] of Object.entries(cases)) {
    assert.deepEqual(matched(detector, text), expected, JSON.stringify(text));
  }
}

describe('email detector', () => {
  it('finds dot-atom addresses with subdomains, plus tags and trailing punctuation', () => {
    expectFound(detectEmails, {
      'write to a.b+c@mail.example.co.uk today': ['a.b+c@mail.example.co.uk'],
      'see foo@bar.com.': ['foo@bar.com'],
      'mailto:name@sub-domain.io, or x_y@z.org': ['name@sub-domain.io', 'x_y@z.org'],
    });
  });

  it('leaves handles, hosts without a top-level domain and version strings alone', () => {
    expectFound(detectEmails, {
      'ping @mention': [],
      'user@localhost': [],
      'x@y and a@b.c': [],
      'pin v1.2@3.4': [],
      'email@123.123.123.123': [],
    });
  });
});

describe('phone detector', () => {
  it('finds international, North American and trunk-prefixed national numbers', () => {
    expectFound(detectPhoneNumbers, {
      'call +1 (415) 555-2671 now': ['+1 (415) 555-2671'],
      '+14155552671': ['+14155552671'],
      'London +44 20 7946 0958, Berlin +49 (0)30 1234567': ['+44 20 7946 0958', '+49 (0)30 1234567'],
      'Paris +33 1 23 45 67 89': ['+33 1 23 45 67 89'],
      '(415) 555-2671 or 415-555-2671 or 415.555.2671 or 1-415-555-2671': [
        '(415) 555-2671',
        '415-555-2671',
        '415.555.2671',
        '1-415-555-2671',
      ],
      'office 020 7946 0958, mobile 06 12 34 56 78': ['020 7946 0958', '06 12 34 56 78'],
    });
  });

  it('leaves years, prices, dates, versions, ranges, ids and bare digit runs alone', () => {
    expectFound(detectPhoneNumbers, {
      'in 2024 it cost $1,234.56': [],
      'order 1234567890 shipped': [],
      'on 2024-01-15 or 01.02.2024': [],
      'v1.2.3 and ISBN 978-0-306-40615-7': [],
      'pages 100-2000': [],
      'at 12:30:45': [],
      'SSN 123-45-6789, card 4111 1111 1111 1111, host 192.168.1.1': [],
      'exchange starting with 1: 555-123-4567': [],
      'too short: +1 2': [],
    });
  });
});

describe('SSN detector', () => {
  it('finds AAA-GG-SSSS numbers', () => {
    expectFound(detectSocialSecurityNumbers, { 'my SSN is 123-45-6789.': ['123-45-6789'] });
  });

  it('excludes numbers the SSA never issues and longer runs', () => {
    expectFound(detectSocialSecurityNumbers, {
      '000-12-3456': [],
      '666-12-3456': [],
      '900-12-3456 999-12-3456': [],
      '123-00-4567': [],
      '123-45-0000': [],
      '123456789': [],
      '1123-45-6789 x123-45-6789 123-45-67890': [],
    });
  });
});

describe('credit-card detector', () => {
  it('finds Luhn-valid numbers of known schemes, grouped or not', () => {
    expectFound(detectCreditCards, {
      'visa 4111 1111 1111 1111': ['4111 1111 1111 1111'],
      'visa 4111-1111-1111-1111.': ['4111-1111-1111-1111'],
      '4111111111111111': ['4111111111111111'],
      'mastercard 5500 0000 0000 0004 and 2221000000000009': ['5500 0000 0000 0004', '2221000000000009'],
      'amex 3400 0000 0000 009 and 378282246310005': ['3400 0000 0000 009', '378282246310005'],
      'discover 6011111111111117, jcb 3530111333300000': ['6011111111111117', '3530111333300000'],
      'card 4111 1111 1111 1111 2024': ['4111 1111 1111 1111'],
    });
  });

  it('refuses a Luhn-invalid number, an unknown issuer and over-long runs', () => {
    expectFound(detectCreditCards, {
      'card 4111111111111112': [],
      'order 1234567812345670': [],
      'id 9999999999999995': [],
      'id 41111111111111111111': [],
    });
    assert.equal(passesLuhn('1234567812345670'), true, 'passes Luhn, yet no scheme issues it');
    assert.equal(hasKnownIssuer('1234567812345670'), false);
    assert.equal(passesLuhn('4111111111111112'), false);
  });
});

describe('IP address detector', () => {
  it('finds IPv4 and IPv6 addresses, compressed forms included', () => {
    expectFound(detectIpAddresses, {
      'hosts 192.168.1.1 and 10.0.0.255, dns 8.8.8.8.': ['192.168.1.1', '10.0.0.255', '8.8.8.8'],
      '2001:0db8:85a3:0000:0000:8a2e:0370:7334': ['2001:0db8:85a3:0000:0000:8a2e:0370:7334'],
      'ping 2001:db8::1 or ::1': ['2001:db8::1', '::1'],
      'link fe80::1%eth0': ['fe80::1%eth0'],
      'mapped ::ffff:192.0.2.128': ['::ffff:192.0.2.128'],
      'dead:beef::cafe': ['dead:beef::cafe'],
    });
  });

  it('leaves versions, out-of-range octets, code and clock times alone', () => {
    expectFound(detectIpAddresses, {
      'release 1.2.3': [],
      'version 1.2.3.4 and v1.2.3.4': [],
      'build 10.0.19041.1': [],
      '256.1.1.1 and 01.02.03.04': [],
      'std::vector, a::b, f :: Int': [],
      'at 12:30:45, mac 00:1A:2B:3C:4D:5E': [],
    });
  });
});
