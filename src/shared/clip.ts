/** At most `max` characters of a caller's text, for echoing it in an error sentence. */
export const clip = (text: string, max = 40): string => (text.length <= max ? text : `${text.slice(0, max)}...`);
