/**
 * A rich send of POST /api/channels/send made ready for `sendFromAgent`: its files of
 * `POST /api/media` found first (before anything is sent), then uploaded for the sending number.
 */
import type { Media } from '../media/index.js';
import type { OutboundContent, OutboundMedia, ProviderSend, WireMedia } from '../messaging/index.js';
import { findSendableMedia, type OutboundMediaDeps, wireMediaFor } from './outbound-media.js';
import type { RichSend } from './send-from-agent.js';

const hasId = (media: OutboundMedia | undefined): media is OutboundMedia & { id: string } => media?.id !== undefined;

/** A file by address, as the wire takes it. */
const linked = (media: OutboundMedia): WireMedia => ({
  kind: media.kind,
  link: media.link ?? '',
  ...(media.filename !== undefined ? { filename: media.filename } : {}),
});

/** The content to send with this file in place (the message's or the template header's). */
function withMedia(content: ProviderSend['content'], media: WireMedia | undefined): ProviderSend['content'] {
  if (!media) return content;
  return content.kind === 'text' ? { ...content, media } : { ...content, headerMedia: media };
}

export async function richSendOf(
  deps: OutboundMediaDeps,
  reader: { readonly orgId: string; readonly agentId: string | null },
  content: ProviderSend['content'],
  rich: OutboundContent,
): Promise<{ content: ProviderSend['content']; rich: RichSend }> {
  const media = rich.media ?? rich.headerMedia;
  const field = rich.media ? 'message.media' : 'template.headerMedia';
  if (!media) return { content, rich: { content: rich } };
  if (!hasId(media)) {
    const ready = withMedia(content, linked(media));
    return { content: ready, rich: { content: rich } };
  }
  const stored: Media = await findSendableMedia(deps, reader, media, field);
  return {
    content,
    rich: {
      content: rich,
      wire: async (sender) => withMedia(content, await wireMediaFor(deps, media, stored, sender)),
    },
  };
}
