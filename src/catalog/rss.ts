import type { CatalogModel } from './catalog.js';

const escapeXml = (text: string): string =>
  text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&apos;')
    // XML 1.0 forbids most control characters even when escaped.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g, '');

/** RFC 822 date, as RSS 2.0 requires: "Sat, 08 Aug 2026 12:00:00 GMT". */
const rfc822 = (unixSeconds: number): string => new Date(unixSeconds * 1000).toUTCString();

/** The model list as an RSS 2.0 document; items follow the list's filters and order. */
export function renderRss(options: {
  models: CatalogModel[];
  origin: string;
  chatLinks: boolean;
  now: Date;
}): string {
  const { models, origin, chatLinks } = options;
  const items = models.map((model) => {
    const link = chatLinks
      ? `${origin}/chat?models=${encodeURIComponent(model.id).replaceAll('%2F', '/').replaceAll('%3A', ':')}`
      : `${origin}${model.record.links.details}`;
    return [
      '<item>',
      `<title>${escapeXml(model.record.name)}</title>`,
      `<link>${escapeXml(link)}</link>`,
      `<guid isPermaLink="false">${escapeXml(model.id)}</guid>`,
      `<description>${escapeXml(model.record.description)}</description>`,
      `<pubDate>${rfc822(model.record.created)}</pubDate>`,
      `<category>${escapeXml(model.facts.author)}</category>`,
      '</item>',
    ].join('');
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>\n',
    '<rss version="2.0"><channel>',
    '<title>Switchyard models</title>',
    `<link>${escapeXml(`${origin}/api/v1/models`)}</link>`,
    '<description>Models available through this Switchyard gateway</description>',
    `<lastBuildDate>${options.now.toUTCString()}</lastBuildDate>`,
    ...items,
    '</channel></rss>\n',
  ].join('');
}
