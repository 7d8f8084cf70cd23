package statuspage

import "testing"

// A service's or an operation's name may break between its words and
// nowhere else: words writes a wbr element (no text, so that the name is
// copied and found whole) before each word of a CamelCase name but the
// first, where a run of capitals gives its last to the word after it, and
// before a word after a punctuation mark; the name's text is escaped, as
// html/template escapes it elsewhere, and a name of one word, or in a
// script without capitals, is written as it is.
func TestNamesBreakBetweenTheirWords(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"DescribeVpcEndpointServiceConfigurations", "Describe<wbr>Vpc<wbr>Endpoint<wbr>Service<wbr>Configurations"},
		{"DescribeDBInstances", "Describe<wbr>DB<wbr>Instances"},
		{"DescribeIpv6Pools", "Describe<wbr>Ipv6<wbr>Pools"},
		{"RegionInstanceGroupManagers.ListManagedInstances", "Region<wbr>Instance<wbr>Group<wbr>Managers.<wbr>List<wbr>Managed<wbr>Instances"},
		{"compute.instances.list", "compute.<wbr>instances.<wbr>list"},
		{"VirtualMachines_List", "Virtual<wbr>Machines_<wbr>List"},
		{"ec2", "ec2"},
		{"ListIAM", "List<wbr>IAM"},
		{"keyvault", "keyvault"},
		{"*", "*"},
		{"", ""},
		{"קריאה", "קריאה"},
		{"Op\u202e", "Op\u202e"},
		{"op\x80", "op\uFFFD"},
		{`<b x="1">Evil&</b>`, `&lt;<wbr>b x=&#34;<wbr>1&#34;&gt;<wbr>Evil&amp;&lt;/<wbr>b&gt;`},
	} {
		if got := string(words(c.name)); got != c.want {
			t.Errorf("words(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// A mark (an accent written after its letter, a vowel sign or a virama of
// an Indic script) is part of the letter before it: a name breaks neither
// between them nor inside a word of a script that writes its vowels as
// marks (a line break after प् in प्राप्त breaks the conjunct it makes
// with र), and a CamelCase word after an accented letter still starts a
// word of its own.
func TestANameBreaksNotBetweenALetterAndItsMarks(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"सूचीप्राप्त", "सूचीप्राप्त"},
		{"get_सूची", "get_<wbr>सूची"},
		{"Re\u0301sume\u0301List", "Re\u0301sume\u0301<wbr>List"},
		{"List.Re\u0301sume\u0301s", "List.<wbr>Re\u0301sume\u0301s"},
		{"E\u0301TAList", "E\u0301TA<wbr>List"},
	} {
		if got := string(words(c.name)); got != c.want {
			t.Errorf("words(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
