/**
 * What every HTTP client integration shares, written once: where a redirect hop may go ({@code
 * AddressPolicy}), what it may carry to another origin ({@code Origins}), and the warm-up of a cold
 * client ({@code WarmUp}).
 */
module dev.pacer.http {
  requires org.slf4j;

  exports dev.pacer.http;
}
